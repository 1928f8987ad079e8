package dev.seqd.client;

import static dev.seqd.client.Harness.control;
import static dev.seqd.client.Harness.eventually;
import static dev.seqd.client.Harness.name;
import static dev.seqd.client.Harness.plain;
import static dev.seqd.client.Harness.ratio;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Locks against a real daemon: holding, renewal, loss, fencing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LockIT {
    private static final Duration SHORT_TTL = Duration.ofSeconds(2); // renewals every 666ms: a loaded CI machine answers some late
    private static final Duration WAIT = Duration.ofSeconds(5);

    /** Holds the lease for 3.5 TTLs, checking it all along, while it renews itself. */
    private static void holdPastThreeTtls(Lease l) throws InterruptedException {
        long end = System.nanoTime() + SHORT_TTL.multipliedBy(7).dividedBy(2).toNanos();
        while (System.nanoTime() - end < 0 && l.isHeld()) {
            Thread.sleep(50);
        }
    }

    @Test
    void acquireHoldPastThreeTtlsRelease() throws Exception {
        String n = name("hold");
        try (Client c = plain()) {
            Lease l = c.lock(n, SHORT_TTL, WAIT);
            try (l) {
                assertTrue(l.sequencer().contains(Long.toUnsignedString(l.token())), l.sequencer());
                assertEquals(c.owner(), l.info().owner());
                assertEquals(Duration.ofMillis(666), l.renewInterval().truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
                var first = l.info().expiresAt();
                holdPastThreeTtls(l);
                assertTrue(l.isHeld(), "the lease was lost while held: " + l.lost().getNow(null));
                assertFalse(l.lost().isDone());
                assertTrue(l.info().expiresAt().isAfter(first), "no renewal moved expires_at");
                CheckResult r = c.check(l.sequencer());
                assertTrue(r.valid(), "check after 3.5 TTLs: " + r);
                assertEquals(l.token(), r.currentToken());
                LockStatus st = c.status(n);
                assertTrue(st.held());
                assertEquals(l.token(), st.token());
                Duration safe = l.confirmSafeFor();
                assertTrue(safe.compareTo(Duration.ZERO) > 0 && safe.compareTo(SHORT_TTL) <= 0, "safe for " + safe);
            }
            assertFalse(l.isHeld());
            assertTrue(l.lost().isCancelled(), "a clean close cancels lost()");
            assertEquals(Duration.ZERO, l.safeFor());
            assertThrows(IllegalStateException.class, l::ensureHeld);
            assertFalse(c.status(n).held(), "released");
            assertFalse(c.check(l.sequencer()).valid());
            // Released, not expired: the next holder gets it at once, with a higher token.
            try (Lease next = c.lock(n, SHORT_TTL, Duration.ZERO)) {
                assertTrue(Long.compareUnsigned(next.token(), l.token()) > 0);
            }
        }
    }

    @Test
    void withoutRenewalTheLeaseExpires() throws Exception {
        // The negative control of the test above: the same hold, renewal off.
        String n = name("norenew");
        try (Client c = plain();
                Lease l = c.lock(n, SHORT_TTL, WAIT, LockOptions.defaults().autoRenew(false))) {
            holdPastThreeTtls(l);
            assertFalse(l.isHeld(), "a lease that was not renewed is still held after 3.5 TTLs");
            LostException why = l.lost().get(1, TimeUnit.SECONDS);
            assertEquals("expired", why.code());
            eventually(Duration.ofSeconds(5), "the daemon to expire the lease", () -> !c.check(l.sequencer()).valid());
            LostException e = assertThrows(LostException.class, () -> c.renew(n, l.leaseId(), l.token()));
            assertEquals(409, e.status());
            assertEquals("lost", e.code());
        }
    }

    @Test
    void aGrantThatCameLaterThanTheTtlIsHeld() throws Exception {
        // The acquire is answered 1.5 TTLs after it was sent: the deadline cannot be measured
        // from the acquire's sending, and the lease must still be handed out held.
        String n = name("late");
        try (Client c = plain()) {
            Lease first = c.lock(n, Duration.ofSeconds(5), WAIT);
            CompletableFuture<Lease> second = CompletableFuture.supplyAsync(() -> c.lock(n, SHORT_TTL, Duration.ofSeconds(20)));
            eventually(Duration.ofSeconds(5), "a waiter", () -> c.status(n).waiters() == 1);
            Thread.sleep(SHORT_TTL.multipliedBy(3).dividedBy(2).toMillis());
            first.close();
            try (Lease l = second.get(20, TimeUnit.SECONDS)) {
                assertTrue(l.isHeld(), "a late grant was handed out lost: " + l.lost().getNow(null));
                holdPastThreeTtls(l);
                assertTrue(l.isHeld(), "lost: " + l.lost().getNow(null));
                assertTrue(c.check(l.sequencer()).valid());
            }
        }
    }

    @Test
    void heldWithAShortWait() {
        String n = name("held");
        try (Client c = plain(); Lease a = c.lock(n, Duration.ofSeconds(5), WAIT)) {
            assertTrue(c.ready());
            HeldException e = assertThrows(HeldException.class,
                    () -> c.lock(n, Duration.ofSeconds(5), Duration.ofMillis(300), LockOptions.defaults().owner("other")));
            assertEquals(409, e.status());
            assertEquals("held", e.code());
            assertTrue(a.isHeld());
        }
    }

    @Test
    void lossByBreakIsSignalledWithinOneRenewInterval() throws Exception {
        Duration ttl = Duration.ofSeconds(3);
        double worst = 0;
        for (int i = 0; i < 3; i++) {
            String n = name("break");
            try (Client c = plain()) {
                Lease l = c.lock(n, ttl, WAIT);
                AtomicLong lostAt = new AtomicLong();
                l.lost().thenRun(() -> lostAt.set(System.nanoTime()));
                AtomicReference<LostException> seen = new AtomicReference<>();
                Thread work = new Thread(() -> {
                    try {
                        while (true) { // one step of work per 10ms, each under the lease
                            l.ensureHeld();
                            Thread.sleep(10);
                        }
                    } catch (LostException e) {
                        seen.set(e);
                    } catch (InterruptedException e) {
                        return;
                    }
                });
                try (l) {
                    work.start();
                    // Break at a varying point of the renewal cycle.
                    Thread.sleep(200 + i * 300);
                    control("/break?kind=lock&name=" + n);
                    long broken = System.nanoTime();
                    LostException why = l.lost().get(10, TimeUnit.SECONDS);
                    long latency = lostAt.get() - broken;
                    work.join(5000);
                    assertFalse(work.isAlive(), "the work did not see the loss");
                    assertNotNull(seen.get());
                    assertEquals("lost", why.code(), why.getMessage());
                    assertEquals("lost", seen.get().code());
                    Duration interval = l.renewInterval();
                    double r = ratio(latency, interval);
                    worst = Math.max(worst, r);
                    System.out.printf("loss after a break: %d ms = %.2f x the renew interval (%d ms)%n",
                            latency / 1_000_000, r, interval.toMillis());
                    assertTrue(latency < interval.plusSeconds(1).toNanos(),
                            "loss signalled " + latency / 1_000_000 + " ms after the break, want within one renew interval");
                    assertFalse(l.isHeld());
                }
                // close() after a loss neither releases nor throws, and keeps the reason.
                assertFalse(l.lost().isCancelled());
                assertEquals("lost", l.lost().get().code());
                LostException again = assertThrows(LostException.class, l::ensureHeld);
                assertEquals("lost", again.code());
            }
        }
        System.out.printf("loss after a break, worst of 3: %.2f x the renew interval%n", worst);
    }

    @Test
    void lossByDaemonRestart() throws Exception {
        String n = name("restart");
        try (Client c = plain()) {
            Lease l = c.lock(n, Duration.ofSeconds(3), WAIT);
            AtomicLong lostAt = new AtomicLong();
            l.lost().thenRun(() -> lostAt.set(System.nanoTime()));
            try (l) {
                long start = System.nanoTime();
                control("/restart");
                long restarted = System.nanoTime();
                LostException why = l.lost().get(10, TimeUnit.SECONDS);
                // Lost at the first renewal the new daemon answers, or at the deadline if the
                // restart took longer than the TTL.
                assertTrue(why.code().equals("lost") || why.code().equals("expired"), why.getMessage());
                long latency = Math.max(0, lostAt.get() - restarted);
                System.out.printf("loss after a restart (%d ms): %d ms after the daemon was back = %.2f x the renew interval (%s)%n",
                        (restarted - start) / 1_000_000, latency / 1_000_000, ratio(latency, l.renewInterval()), why.code());
                assertTrue(latency < l.renewInterval().plusSeconds(1).toNanos(), "loss signalled " + latency / 1_000_000 + " ms after the restart");
            }
            // The new daemon serves this client's next lease, once ZooKeeper has expired the
            // killed daemon's session (4s) and its contender with it: a grant that comes
            // later than the TTL after the acquire was sent.
            try (Lease again = c.lock(n, SHORT_TTL, Duration.ofSeconds(20))) {
                assertTrue(again.isHeld());
            }
        }
    }

    @Test
    void unreachableDaemonLosesTheLeaseAtItsDeadline() throws Exception {
        String n = name("unreachable");
        Duration ttl = Duration.ofMillis(1500);
        try (Harness.Proxy proxy = new Harness.Proxy(Harness.env("SEQD_ADDR"));
                Client c = Client.builder(java.util.Map.of()).addr(proxy.addr()).build()) {
            Lease l = c.lock(n, ttl, WAIT);
            try (l) {
                var first = l.info().expiresAt();
                eventually(Duration.ofSeconds(5), "a renewal through the proxy", () -> l.info().expiresAt().isAfter(first));
                proxy.cut();
                long cut = System.nanoTime();
                // Every renewal sent before the cut: the deadline is at most ttl after it. The
                // lease must not be reported held past that, whatever the timers do.
                long due = cut + ttl.toNanos();
                while (System.nanoTime() - due < 0) {
                    if (!l.isHeld()) {
                        break;
                    }
                    Thread.sleep(10);
                }
                Thread.sleep(Math.max(0, (due - System.nanoTime()) / 1_000_000 + 1));
                assertFalse(l.isHeld(), "held past the deadline");
                assertEquals(Duration.ZERO, l.safeFor());
                LostException why = l.lost().get(1, TimeUnit.SECONDS);
                assertEquals("expired", why.code(), why.getMessage());
                assertTrue(why.getCause() instanceof UnavailableException, "cause: " + why.getCause());
            }
            // Closing a lost lease sends nothing and throws nothing (the daemon is unreachable).
            assertFalse(l.lost().isCancelled());
        }
        // The daemon expires it by itself.
        try (Client c = plain()) {
            eventually(Duration.ofSeconds(10), "the daemon to expire the lease", () -> !c.status(n).held());
        }
    }

    @Test
    void daemonDownIsUnavailable() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        try (Client c = Client.builder(java.util.Map.of()).addr("http://127.0.0.1:" + port).build()) {
            long t0 = System.nanoTime();
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.lock(name("down"), SHORT_TTL, WAIT));
            System.out.printf("acquire with the daemon down: UnavailableException after %d ms: %s%n",
                    (System.nanoTime() - t0) / 1_000_000, e.getMessage());
            assertEquals(0, e.status());
            assertEquals("unavailable", e.code());
            assertFalse(c.ready());
        }
    }

    @Test
    void staleTokenAtCheckAndRenew() {
        String n = name("stale");
        try (Client c = plain()) {
            Lease old = c.lock(n, SHORT_TTL, WAIT);
            old.close();
            try (Lease cur = c.lock(n, SHORT_TTL, WAIT)) {
                CheckResult r = c.check(old.sequencer());
                assertFalse(r.valid());
                assertEquals("stale_token", r.code());
                assertEquals(cur.token(), r.currentToken());
                assertTrue(c.check(cur.sequencer()).valid());
                assertTrue(c.check(n, cur.token()).valid());
                StaleTokenRefusedException e = assertThrows(StaleTokenRefusedException.class, () -> c.renew(n, old.leaseId(), old.token()));
                assertEquals(409, e.status());
                assertEquals(cur.token(), e.currentToken().getAsLong());
            }
        }
    }

    @Test
    void sharedLeasesHoldTogetherAndExcludeAnExclusiveOne() {
        String n = name("shared");
        LockOptions shared = LockOptions.defaults().shared();
        try (Client c = plain();
                Lease r1 = c.lock(n, Duration.ofSeconds(5), WAIT, shared);
                Lease r2 = c.lock(n, Duration.ofSeconds(5), Duration.ZERO, shared)) {
            assertEquals("shared", r1.info().mode());
            assertTrue(r1.isHeld() && r2.isHeld());
            assertThrows(HeldException.class, () -> c.lock(n, Duration.ofSeconds(5), Duration.ZERO));
        }
    }

    @Test
    void blockingStatusReadWakesOnAGrant() throws Exception {
        String n = name("watch");
        try (Client c = plain()) {
            LockStatus before = c.status(n);
            assertFalse(before.held());
            CompletableFuture<LockStatus> changed =
                    CompletableFuture.supplyAsync(() -> c.waitStatus(n, before.index(), Duration.ofSeconds(30)));
            Thread.sleep(100); // the read may or may not have arrived: either way it answers the change
            try (Lease l = c.lock(n, Duration.ofSeconds(5), WAIT)) {
                LockStatus after = changed.get(20, TimeUnit.SECONDS);
                assertTrue(after.held(), "woke with " + after);
                assertEquals(l.token(), after.token());
                assertTrue(after.index() != before.index());
            }
        }
    }

    @Test
    void badNameIsABadRequest() {
        try (Client c = plain()) {
            BadRequestException e = assertThrows(BadRequestException.class, () -> c.lock("a//b", SHORT_TTL, Duration.ZERO));
            assertEquals(400, e.status());
            BadRequestException t = assertThrows(BadRequestException.class, () -> c.lock(name("ttl"), Duration.ofHours(2), Duration.ZERO));
            assertTrue(t.getMessage().contains("ttl"), t.getMessage());
        }
    }
}
