package dev.seqd.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.reflect.Field;
import java.sql.Connection;
import org.junit.jupiter.api.Test;

/**
 * The fence table and the script are the Go fences': a max the Go fences wrote (1000 on the key
 * SEQD_TEST_FENCE_INTEROP_KEY, in each database) is read here, and the harness reads back what
 * this suite wrote (1001).
 */
class GoInteropIT {
    @FunctionalInterface
    interface Admit {
        void admit(String key, long token) throws Exception;
    }

    static void steps(Admit a) throws Exception {
        String key = FenceCasesIT.env("SEQD_TEST_FENCE_INTEROP_KEY");
        StaleTokenException e = assertThrows(StaleTokenException.class, () -> a.admit(key, 999));
        assertEquals(1000, e.max());
        a.admit(key, 1000);
        a.admit(key, 1001);
    }

    static String createSql(JdbcFence f) throws Exception {
        Field field = JdbcFence.class.getDeclaredField("createTable");
        field.setAccessible(true);
        return (String) field.get(f);
    }

    @Test
    void sameSqlAsGo() throws Exception {
        assertEquals(FenceCasesIT.env("SEQD_TEST_FENCE_GO_CREATE_POSTGRES"), createSql(JdbcFence.postgres()));
        assertEquals(FenceCasesIT.env("SEQD_TEST_FENCE_GO_CREATE_MARIADB"), createSql(JdbcFence.mariadb()));
    }

    @Test
    void maxesWrittenByGo() throws Exception {
        for (FenceCasesIT.Dialect d : new FenceCasesIT.Dialect[] {FenceCasesIT.postgres(), FenceCasesIT.mariadb()}) {
            try (Connection c = FenceCasesIT.connect(d)) {
                steps((key, t) -> d.fence().inTransaction(c, key, t, x -> null));
            }
        }
        try (Resp r = FenceCasesIT.redis()) {
            RedisFence f = RedisFence.open(r);
            steps(f::admit);
        }
    }
}
