package dev.seqd.client;

import static dev.seqd.client.Harness.env;
import static dev.seqd.client.Harness.name;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The locked-down daemon: HTTPS with a client certificate and a bearer token. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SecureIT {
    /** The SEQD_* settings a user would export to reach the locked-down daemon. */
    private static Map<String, String> secureEnv() {
        Map<String, String> m = new HashMap<>();
        m.put("SEQD_ADDR", env("SEQD_TEST_SECURE_ADDR"));
        m.put("SEQD_API_TOKEN_FILE", env("SEQD_TEST_SECURE_API_TOKEN_FILE"));
        m.put("SEQD_CACERT", env("SEQD_TEST_SECURE_CACERT"));
        m.put("SEQD_CERT", env("SEQD_TEST_SECURE_CERT"));
        m.put("SEQD_KEY", env("SEQD_TEST_SECURE_KEY"));
        return m;
    }

    @Test
    void newClientReadsTokenAndTlsFromTheEnvironment() throws Exception {
        // new Client() reads System.getenv, which a JVM cannot change for itself: run it in a
        // child JVM whose environment holds the settings.
        String cp = Path.of(Client.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                + File.pathSeparator
                + Path.of(EnvProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ProcessBuilder pb = new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", cp, EnvProbe.class.getName(), name("env"));
        pb.environment().keySet().removeIf(k -> k.startsWith("SEQD_"));
        pb.environment().putAll(secureEnv());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        System.out.print("child JVM with SEQD_* from the environment: " + out);
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("addr=" + env("SEQD_TEST_SECURE_ADDR") + " "), out);
        assertTrue(out.contains("valid=true"), out);
    }

    @Test
    void refusedWithoutTheToken() {
        Map<String, String> m = secureEnv();
        m.remove("SEQD_API_TOKEN_FILE");
        try (Client c = Client.builder(m).build()) {
            UnauthorizedException e = assertThrows(UnauthorizedException.class,
                    () -> c.lock(name("notoken"), Duration.ofSeconds(2), Duration.ZERO));
            assertEquals(401, e.status());
            assertEquals("unauthorized", e.code());
        }
        // With the settings, the same client code is served.
        try (Client c = Client.builder(secureEnv()).build();
                Lease l = c.lock(name("token"), Duration.ofSeconds(2), Duration.ZERO)) {
            assertTrue(c.check(l.sequencer()).valid());
        }
    }

    @Test
    void refusedWithoutAClientCertificate() {
        Map<String, String> m = secureEnv();
        m.remove("SEQD_CERT");
        m.remove("SEQD_KEY");
        try (Client c = Client.builder(m).build()) {
            UnavailableException e = assertThrows(UnavailableException.class,
                    () -> c.lock(name("nocert"), Duration.ofSeconds(2), Duration.ZERO));
            assertEquals(0, e.status(), "a TLS refusal has no HTTP status");
        }
    }
}
