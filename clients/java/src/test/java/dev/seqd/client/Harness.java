package dev.seqd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * What the integration tests share: the daemons of clients/harness_test.go (their addresses in
 * SEQD_ADDR, SEQD_TEST_SECURE_* and SEQD_TEST_CONTROL), unique names, polling.
 */
final class Harness {
    private Harness() {}

    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final String RUN = Long.toHexString(System.nanoTime());

    static String env(String key) {
        String v = System.getenv(key);
        if (v == null || v.isEmpty()) {
            fail(key + " is not set: run these tests through go test ./clients/ -run TestJavaClient");
        }
        return v;
    }

    /** A client of the plain daemon, configured explicitly (not from SEQD_* beyond its address). */
    static Client plain() {
        return Client.builder(java.util.Map.of()).addr(env("SEQD_ADDR")).build();
    }

    /** A name no other test (or suite, or run) uses. */
    static String name(String what) {
        return "java/" + what + "-" + RUN + "-" + SEQ.incrementAndGet();
    }

    /** POSTs to the control server (break a lease, restart the plain daemon). */
    static String control(String pathAndQuery) throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(env("SEQD_TEST_CONTROL") + pathAndQuery))
                        .timeout(Duration.ofSeconds(60))
                        .POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), "control " + pathAndQuery + ": " + r.body());
        return r.body();
    }

    /** Polls cond every 20ms until it holds; fails after timeout. */
    static void eventually(Duration timeout, String what, BooleanSupplier cond) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                fail("timed out after " + timeout + " waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    static double ratio(long nanos, Duration of) {
        return (double) nanos / of.toNanos();
    }

    /**
     * A TCP proxy to the plain daemon that can be cut: the daemon then looks unreachable to the
     * clients behind it (connections reset, new ones refused).
     */
    static final class Proxy implements AutoCloseable {
        private final ServerSocket server;
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private final String target;

        Proxy(String targetAddr) throws IOException {
            URI u = URI.create(targetAddr);
            this.target = u.getHost() + ":" + u.getPort();
            server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread t = new Thread(this::accept, "proxy-accept");
            t.setDaemon(true);
            t.start();
        }

        String addr() {
            return "http://127.0.0.1:" + server.getLocalPort();
        }

        private void accept() {
            while (true) {
                try {
                    Socket in = server.accept();
                    String[] hp = target.split(":");
                    Socket out = new Socket(hp[0], Integer.parseInt(hp[1]));
                    sockets.add(in);
                    sockets.add(out);
                    pump(in, out);
                    pump(out, in);
                } catch (IOException e) {
                    return; // cut
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
                    i.transferTo(o);
                } catch (IOException e) {
                    // a cut, or the other side closed
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "proxy-pump");
            t.setDaemon(true);
            t.start();
        }

        /** Closes the listener and every connection. */
        void cut() {
            closeQuietly(server);
            for (Socket s : sockets) {
                closeQuietly(s);
            }
        }

        @Override
        public void close() {
            cut();
        }

        private static void closeQuietly(AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                // already closed
            }
        }
    }
}
