package dev.seqd.client;

import static dev.seqd.client.Harness.name;
import static dev.seqd.client.Harness.plain;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MultiLockIT {
    @Test
    void holdsEveryLockUntilReleased() {
        String a = name("multi-a");
        String b = name("multi-b");
        try (Client c = plain()) {
            MultiLease lease = c.acquireMulti(List.of(a, b), Duration.ofSeconds(5), Duration.ZERO);
            assertEquals(List.of(a, b), lease.locks().stream().map(MultiLease.Lock::name).toList());
            assertTrue(lease.locks().stream().allMatch(l -> l.token() != 0));
            assertEquals(2, lease.sequencers().split(" ").length);
            for (String n : List.of(a, b)) {
                assertThrows(HeldException.class, () -> c.acquire(n, Duration.ofSeconds(2), Duration.ofMillis(100), LockOptions.defaults()),
                        n + " is held by the multi-lock");
            }
            assertEquals(lease.leaseId(), c.multiLockStatus(lease.leaseId()).get("lease_id"));
            MultiLease renewed = c.renewMulti(lease);
            assertEquals(lease.locks().stream().map(MultiLease.Lock::token).toList(),
                    renewed.locks().stream().map(MultiLease.Lock::token).toList());
            c.releaseMulti(lease);
            for (String n : List.of(a, b)) {
                LeaseInfo l = c.acquire(n, Duration.ofSeconds(2), Duration.ZERO, LockOptions.defaults());
                c.release(n, l.leaseId(), l.token());
            }
            SeqdException e = assertThrows(SeqdException.class, () -> c.renewMulti(lease));
            assertEquals(409, e.status(), "renewing a released multi-lock: " + e.getMessage());
        }
    }

    @Test
    void aSetWithAHeldLockTakesNoneOfIt() {
        String a = name("multi-held-a");
        String b = name("multi-held-b");
        try (Client c = plain()) {
            LeaseInfo held = c.acquire(b, Duration.ofSeconds(5), Duration.ZERO, LockOptions.defaults());
            assertThrows(HeldException.class, () -> c.acquireMulti(List.of(a, b), Duration.ofSeconds(2), Duration.ofMillis(200)));
            LeaseInfo l = c.acquire(a, Duration.ofSeconds(2), Duration.ZERO, LockOptions.defaults());
            c.release(a, l.leaseId(), l.token());
            c.release(b, held.leaseId(), held.token());
        }
    }
}
