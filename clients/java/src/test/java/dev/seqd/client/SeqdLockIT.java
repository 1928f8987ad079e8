package dev.seqd.client;

import static dev.seqd.client.Harness.control;
import static dev.seqd.client.Harness.env;
import static dev.seqd.client.Harness.eventually;
import static dev.seqd.client.Harness.name;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SeqdLock} against a real daemon, used through {@link Lock} (the fence methods aside):
 * exclusion between threads and between processes, waiting, interruption, re-entry and loss.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SeqdLockIT {
    private static final Duration TTL = Duration.ofSeconds(5);

    private static Client client(String owner) {
        return Client.builder(Map.of()).addr(env("SEQD_ADDR")).owner(owner).build();
    }

    private static SeqdLock lock(Client c, String n) {
        return SeqdLock.builder(c, n).ttl(TTL).build();
    }

    /** Runs body on a thread of its own (a hold belongs to its thread); join() rethrows. */
    private static final class Worker {
        private final Thread thread;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();

        Worker(String what, ThrowingRunnable body) {
            thread = new Thread(() -> {
                try {
                    body.run();
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, what);
            thread.start();
        }

        void join() throws Exception {
            thread.join(30_000);
            assertFalse(thread.isAlive(), thread.getName() + " did not finish");
            if (failure.get() != null) {
                throw new AssertionError(thread.getName() + " failed", failure.get());
            }
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void lockUnlockAndTryLockWithATimeout() throws Exception {
        String n = name("lock");
        try (Client ca = client("lock-a"); Client cb = client("lock-b")) {
            SeqdLock sa = lock(ca, n);
            Lock a = sa;
            Lock b = lock(cb, n);
            a.lock();
            long fenceA = sa.getFence();
            assertTrue(sa.isLockedByCurrentThread());
            assertTrue(((SeqdLock) b).isLocked(), "another client sees the lock held");
            assertTrue(ca.check(sa.getSequencer()).valid());
            assertFalse(b.tryLock(), "tryLock() got a lock another holds");
            long t0 = System.nanoTime();
            assertFalse(b.tryLock(400, TimeUnit.MILLISECONDS), "tryLock(400ms) got a lock another holds");
            long waited = System.nanoTime() - t0;
            assertTrue(waited >= TimeUnit.MILLISECONDS.toNanos(390), "tryLock(400ms) gave up after " + waited / 1_000_000 + " ms");

            // A waiter in tryLock(timeout) gets the lock when the holder unlocks.
            AtomicReference<Long> fenceB = new AtomicReference<>();
            Worker w = new Worker("waiter", () -> {
                assertTrue(b.tryLock(20, TimeUnit.SECONDS), "tryLock(20s) did not get the released lock");
                try {
                    fenceB.set(((SeqdLock) b).getFence());
                } finally {
                    b.unlock();
                }
            });
            eventually(Duration.ofSeconds(10), "the waiter to queue", () -> ca.status(n).waiters() == 1);
            a.unlock();
            assertFalse(sa.isLockedByCurrentThread());
            w.join();
            assertTrue(Long.compareUnsigned(fenceB.get(), fenceA) > 0, "fence " + fenceB.get() + " after " + fenceA);
            assertFalse(ca.check(n, fenceA).valid(), "the first holder's fence is still current");
            eventually(Duration.ofSeconds(5), "the lock to be free", () -> !sa.isLocked());
            assertThrows(IllegalMonitorStateException.class, a::unlock, "unlock without a hold");
            assertThrows(IllegalMonitorStateException.class, sa::getFence, "getFence without a hold");
        }
    }

    @Test
    void lockWaitsAcrossSeveralAcquires() throws Exception {
        // lock() waits in acquires of at most a slice each (a minute by default; 300 ms here):
        // held for about four slices by another, it still ends with the lock.
        String n = name("slices");
        try (Client ca = client("slices-a"); Client cb = client("slices-b")) {
            Lock a = lock(ca, n);
            Lock b = SeqdLock.builder(cb, n).ttl(TTL).waitSlice(Duration.ofMillis(300)).build();
            a.lock();
            AtomicBoolean got = new AtomicBoolean();
            Worker w = new Worker("slow waiter", () -> {
                b.lock();
                got.set(true);
                b.unlock();
            });
            Thread.sleep(1200);
            assertFalse(got.get(), "lock() returned while another held the lock");
            a.unlock();
            w.join();
            assertTrue(got.get());
        }
    }

    @Test
    void lockInterruptiblyEndsWithInterruptedExceptionAndLeavesNoLease() throws Exception {
        String n = name("interrupt");
        try (Client ca = client("interrupt-a"); Client cb = client("interrupt-b"); Client cc = client("interrupt-c")) {
            Lock a = lock(ca, n);
            Lock b = lock(cb, n);
            a.lock();
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicBoolean flagAfter = new AtomicBoolean(true);
            Thread t = new Thread(() -> {
                try {
                    b.lockInterruptibly();
                    b.unlock();
                } catch (Throwable e) {
                    thrown.set(e);
                    flagAfter.set(Thread.currentThread().isInterrupted());
                }
            });
            t.start();
            eventually(Duration.ofSeconds(10), "the waiter to queue", () -> ca.status(n).waiters() == 1);
            t.interrupt();
            t.join(10_000);
            assertFalse(t.isAlive(), "lockInterruptibly() went on waiting after an interrupt");
            assertInstanceOf(InterruptedException.class, thrown.get());
            assertFalse(flagAfter.get(), "the interrupt status is still set after InterruptedException");
            assertNoLeaseLeft(ca, a, cc, n, "interrupt-b");
        }
    }

    @Test
    void tryLockWithATimeoutEndsWithInterruptedExceptionAndLeavesNoLease() throws Exception {
        String n = name("interrupt-try");
        try (Client ca = client("itry-a"); Client cb = client("itry-b"); Client cc = client("itry-c")) {
            Lock a = lock(ca, n);
            Lock b = lock(cb, n);
            a.lock();
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    b.tryLock(30, TimeUnit.SECONDS);
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            t.start();
            eventually(Duration.ofSeconds(10), "the waiter to queue", () -> ca.status(n).waiters() == 1);
            t.interrupt();
            t.join(10_000);
            assertFalse(t.isAlive(), "tryLock(30s) went on waiting after an interrupt");
            assertInstanceOf(InterruptedException.class, thrown.get());
            assertNoLeaseLeft(ca, a, cc, n, "itry-b");

            // Interrupted before the call: it throws at once, and asks nothing.
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, b::lockInterruptibly);
            Thread.currentThread().interrupt();
            assertThrows(InterruptedException.class, () -> b.tryLock(1, TimeUnit.SECONDS));
            assertFalse(Thread.currentThread().isInterrupted());
        }
    }

    /**
     * After an interrupted wait on a lock that a holds: no waiter is left at the daemon, and once a
     * unlocks, a third client gets the lock at once (a lease left behind would hold it).
     */
    private static void assertNoLeaseLeft(Client ca, Lock a, Client cc, String n, String interruptedOwner) throws Exception {
        eventually(Duration.ofSeconds(10), "the interrupted waiter to be withdrawn", () -> ca.status(n).waiters() == 0);
        a.unlock();
        Lock c = lock(cc, n);
        assertTrue(c.tryLock(), "the lock was not free after its holder unlocked: the interrupted acquire left a lease");
        c.unlock();
        for (LeaseInfo l : ca.leases()) {
            assertNotEquals(interruptedOwner, l.owner(), "a lease of the interrupted client: " + l);
        }
    }

    @Test
    void aWaitGivenUpWithoutCancellingItsRequestTakesTheLock() throws Exception {
        // The negative control of the two tests above: a waiter that stops waiting but leaves its
        // acquire running gets the lock once it is released, and the third client is refused.
        String n = name("abandoned");
        try (Client ca = client("abandon-a"); Client cb = client("abandon-b"); Client cc = client("abandon-c")) {
            Lock a = lock(ca, n);
            a.lock();
            CompletableFuture<Lease> abandoned = CompletableFuture.supplyAsync(() -> cb.lock(n, TTL, Duration.ofSeconds(30)));
            eventually(Duration.ofSeconds(10), "the waiter to queue", () -> ca.status(n).waiters() == 1);
            a.unlock();
            Lease l = abandoned.get(10, TimeUnit.SECONDS);
            try (l) {
                assertFalse(lock(cc, n).tryLock(), "the check saw a free lock although a waiter took it");
            }
        }
    }

    /**
     * A TCP proxy to the plain daemon that holds back, for a while, the answer on a connection
     * whose first request is an acquire: the daemon has granted the lock, the client has not heard.
     */
    private static final class SlowGrantProxy implements AutoCloseable {
        private final java.net.ServerSocket server;
        private final List<java.net.Socket> sockets = new CopyOnWriteArrayList<>();

        SlowGrantProxy(String target, Duration holdBack) throws java.io.IOException {
            java.net.URI u = java.net.URI.create(target);
            server = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
            Thread t = new Thread(() -> {
                while (true) {
                    try {
                        java.net.Socket in = server.accept();
                        java.net.Socket out = new java.net.Socket(u.getHost(), u.getPort());
                        sockets.add(in);
                        sockets.add(out);
                        byte[] first = new byte[8192];
                        int n = in.getInputStream().read(first);
                        if (n < 0) {
                            continue;
                        }
                        out.getOutputStream().write(first, 0, n);
                        boolean acquire = new String(first, 0, n, StandardCharsets.ISO_8859_1).contains("/acquire ");
                        pump(in, out, Duration.ZERO);
                        pump(out, in, acquire ? holdBack : Duration.ZERO);
                    } catch (java.io.IOException e) {
                        return; // closed
                    }
                }
            }, "slow-grant-proxy");
            t.setDaemon(true);
            t.start();
        }

        String addr() {
            return "http://127.0.0.1:" + server.getLocalPort();
        }

        private void pump(java.net.Socket from, java.net.Socket to, Duration delay) {
            Thread t = new Thread(() -> {
                try {
                    Thread.sleep(delay.toMillis());
                    from.getInputStream().transferTo(to.getOutputStream());
                } catch (java.io.IOException | InterruptedException e) {
                    // closed
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "slow-grant-pump");
            t.setDaemon(true);
            t.start();
        }

        private static void closeQuietly(AutoCloseable c) {
            try {
                c.close();
            } catch (Exception e) {
                // closed already
            }
        }

        @Override
        public void close() {
            closeQuietly(server);
            sockets.forEach(SlowGrantProxy::closeQuietly);
        }
    }

    /**
     * Interrupts, 300 ms in, a thread whose acquire the daemon granted at once but whose answer a
     * proxy holds back for 10 s; answers whether the lock was free right after (a third client's
     * tryLock), and closes what the run left.
     */
    private static boolean freeAfterAnInterruptedGrant(String n, ThrowingRunnable acquire) throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                acquire.run();
            } catch (Throwable e) {
                thrown.set(e);
            }
        });
        try (Client cc = client("slow-grant-c")) {
            t.start();
            eventually(Duration.ofSeconds(10), "the grant", () -> cc.status(n).held());
            Thread.sleep(300);
            t.interrupt();
            t.join(10_000);
            assertFalse(t.isAlive(), "the acquire went on waiting after an interrupt");
            assertTrue(thrown.get() != null, "the acquire returned, though its answer was held back");
            Lock c = lock(cc, n);
            boolean free = c.tryLock(1, TimeUnit.SECONDS);
            if (free) {
                c.unlock();
            }
            return free;
        }
    }

    @Test
    void aGrantThatCameJustBeforeAnInterruptIsReleased() throws Exception {
        String n = name("interrupted-grant");
        try (SlowGrantProxy proxy = new SlowGrantProxy(env("SEQD_ADDR"), Duration.ofSeconds(10));
                Client cb = Client.builder(Map.of()).addr(proxy.addr()).owner("slow-grant-b").build()) {
            Lock b = lock(cb, n);
            assertTrue(freeAfterAnInterruptedGrant(n, () -> b.tryLock(10, TimeUnit.SECONDS)),
                    "the lock was held after an interrupted tryLock whose grant came first: a lease was left behind");
        }
    }

    @Test
    void aCancelledAcquireWhoseGrantCameFirstLeavesALease() throws Exception {
        // The negative control of the test above: the client's own lock() cancels its request on
        // an interrupt and does no more, and the grant that came first holds the lock for nobody
        // (until its TTL).
        String n = name("interrupted-grant-raw");
        try (SlowGrantProxy proxy = new SlowGrantProxy(env("SEQD_ADDR"), Duration.ofSeconds(10));
                Client cb = Client.builder(Map.of()).addr(proxy.addr()).owner("slow-grant-raw").build()) {
            assertFalse(freeAfterAnInterruptedGrant(n, () -> cb.lock(n, TTL, Duration.ofSeconds(10))),
                    "the check saw a free lock although a cancelled grant held it");
        }
    }

    @Test
    void lockIgnoresAnInterruptAndReturnsWithItSet() throws Exception {
        String n = name("uninterruptible");
        try (Client ca = client("unint-a"); Client cb = client("unint-b")) {
            SeqdLock sa = lock(ca, n);
            Lock a = sa;
            Lock b = lock(cb, n);
            a.lock();
            long fenceA = sa.getFence();
            AtomicBoolean flagOnReturn = new AtomicBoolean();
            AtomicReference<Long> fenceB = new AtomicReference<>();
            Worker w = new Worker("uninterruptible waiter", () -> {
                b.lock();
                flagOnReturn.set(Thread.interrupted());
                try {
                    fenceB.set(((SeqdLock) b).getFence());
                } finally {
                    b.unlock();
                }
            });
            eventually(Duration.ofSeconds(10), "the waiter to queue", () -> ca.status(n).waiters() == 1);
            w.thread.interrupt();
            Thread.sleep(300);
            assertTrue(w.thread.isAlive(), "lock() ended its wait on an interrupt");
            a.unlock();
            w.join();
            assertTrue(flagOnReturn.get(), "lock() returned with the interrupt status cleared");
            assertTrue(Long.compareUnsigned(fenceB.get(), fenceA) > 0);
        }
    }

    @Test
    void reentryUpToTheLimitThenRefused() throws Exception {
        String n = name("reentry");
        try (Client ca = client("reentry-a"); Client cb = client("reentry-b")) {
            SeqdLock sa = SeqdLock.builder(ca, n).ttl(TTL).acquireLimit(3).build();
            Lock a = sa;
            Lock b = lock(cb, n);
            a.lock();
            long fence = sa.getFence();
            assertTrue(a.tryLock());
            assertEquals(fence, sa.getFence(), "a re-entry changed the fence");
            assertTrue(a.tryLock(1, TimeUnit.SECONDS));
            assertEquals(fence, sa.getFence());
            assertEquals(3, sa.getHoldCount());
            LockAcquireLimitReachedException e = assertThrows(LockAcquireLimitReachedException.class, a::lock);
            assertTrue(e.getMessage().contains("3 times"), e.getMessage());
            assertThrows(LockAcquireLimitReachedException.class, a::lockInterruptibly);
            assertFalse(a.tryLock(), "tryLock() past the limit");
            assertFalse(a.tryLock(200, TimeUnit.MILLISECONDS), "tryLock(200ms) past the limit");
            assertEquals(3, sa.getHoldCount(), "a refused re-entry changed the count");
            a.unlock();
            a.unlock();
            assertTrue(sa.isLockedByCurrentThread());
            assertFalse(b.tryLock(), "another got the lock while one hold was left");
            a.unlock();
            assertEquals(0, sa.getHoldCount());
            assertTrue(b.tryLock(5, TimeUnit.SECONDS), "the last unlock did not release the lock");
            b.unlock();
            assertThrows(IllegalMonitorStateException.class, a::unlock);
        }
    }

    @Test
    void limitOneIsNotReentrantAndNoLimitIs() throws Exception {
        String n = name("limits");
        try (Client c = client("limits")) {
            Lock once = SeqdLock.builder(c, n).ttl(TTL).acquireLimit(1).build();
            once.lock();
            LockAcquireLimitReachedException e = assertThrows(LockAcquireLimitReachedException.class, once::lock);
            assertTrue(e.getMessage().contains("not reentrant"), e.getMessage());
            assertFalse(once.tryLock());
            once.unlock();
            once.lock(); // free again: a new hold
            once.unlock();

            SeqdLock many = lock(c, n);
            long fence = many.lockAndGetFence();
            for (int i = 0; i < 20; i++) {
                assertEquals(fence, many.lockAndGetFence());
            }
            assertEquals(21, many.getHoldCount());
            for (int i = 0; i < 21; i++) {
                many.unlock();
            }
            assertFalse(many.isLocked());
            assertThrows(IllegalArgumentException.class, () -> SeqdLock.builder(c, n).acquireLimit(-1));
        }
    }

    /**
     * Threads (each lockFor(i) a lock) enter a critical section in turn; inside, each watches for
     * 500 ms for another thread inside. Answers how many entries saw one, and checks that the
     * fences (if any) rise in the order of entry.
     */
    private static int overlapsOfThreads(IntFunction<Lock> lockFor, int threads, int entries) throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<Long> fences = new CopyOnWriteArrayList<>();
        CyclicBarrier start = new CyclicBarrier(threads);
        List<Worker> ws = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Lock l = lockFor.apply(i);
            ws.add(new Worker("entrant-" + i, () -> {
                start.await(10, TimeUnit.SECONDS);
                for (int j = 0; j < entries; j++) {
                    l.lock();
                    try {
                        inside.incrementAndGet();
                        if (l instanceof SeqdLock s) {
                            fences.add(s.getFence());
                        }
                        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                        boolean seen = false;
                        while (!seen && System.nanoTime() - end < 0) {
                            seen = inside.get() > 1;
                            Thread.sleep(5);
                        }
                        if (seen) {
                            overlaps.incrementAndGet();
                        }
                        inside.decrementAndGet();
                    } finally {
                        l.unlock();
                    }
                }
            }));
        }
        for (Worker w : ws) {
            w.join();
        }
        for (int i = 1; i < fences.size(); i++) {
            assertTrue(Long.compareUnsigned(fences.get(i), fences.get(i - 1)) > 0, "fences in the order of entry: " + fences);
        }
        return overlaps.get();
    }

    @Test
    void twoThreadsAreExcluded() throws Exception {
        String n = name("threads");
        try (Client c = client("threads")) {
            SeqdLock shared = lock(c, n);
            int overlaps = overlapsOfThreads(i -> shared, 2, 2);
            assertEquals(0, overlaps, "entries that saw the other thread inside");
        }
    }

    @Test
    void aLockPerThreadDoesNotExcludeTwoThreads() throws Exception {
        // The negative control of the test above: the same check catches two threads inside.
        int overlaps = overlapsOfThreads(i -> new ReentrantLock(), 2, 1);
        assertTrue(overlaps > 0, "the check saw no overlap between two threads that nothing excludes");
    }

    /** Runs two LockProbe JVMs (one on the plain daemon, one on the locked-down one) and reads the log. */
    private static List<String[]> runProbes(String mode, String n, int entries, Path dir) throws Exception {
        String cp = Path.of(Client.class.getProtectionDomain().getCodeSource().getLocation().toURI())
                + File.pathSeparator
                + Path.of(LockProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<Map<String, String>> envs = List.of(
                Map.of("SEQD_ADDR", env("SEQD_ADDR")),
                // The other process reaches the same ZooKeeper through the locked-down daemon,
                // with the token and certificates from the environment, as a user exports them.
                Map.of("SEQD_ADDR", env("SEQD_TEST_SECURE_ADDR"),
                        "SEQD_API_TOKEN_FILE", env("SEQD_TEST_SECURE_API_TOKEN_FILE"),
                        "SEQD_CACERT", env("SEQD_TEST_SECURE_CACERT"),
                        "SEQD_CERT", env("SEQD_TEST_SECURE_CERT"),
                        "SEQD_KEY", env("SEQD_TEST_SECURE_KEY")));
        List<Process> ps = new ArrayList<>();
        for (Map<String, String> e : envs) {
            ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp", cp, LockProbe.class.getName(), mode, n, Integer.toString(entries), dir.toString());
            pb.environment().keySet().removeIf(k -> k.startsWith("SEQD_"));
            pb.environment().putAll(e);
            pb.redirectErrorStream(true);
            pb.redirectOutput(dir.resolve("out-" + ps.size()).toFile());
            ps.add(pb.start());
        }
        try {
            eventually(Duration.ofSeconds(30), "both probes to start", () -> {
                try (var s = Files.list(dir)) {
                    return s.filter(p -> p.getFileName().toString().startsWith("ready-")).count() == 2
                            || ps.stream().anyMatch(p -> !p.isAlive());
                } catch (java.io.IOException ex) {
                    return false;
                }
            });
            Files.writeString(dir.resolve("go"), "");
            for (int i = 0; i < ps.size(); i++) {
                Process p = ps.get(i);
                assertTrue(p.waitFor(40, TimeUnit.SECONDS), "probe " + i + " did not finish");
                String out = Files.readString(dir.resolve("out-" + i));
                assertEquals(0, p.exitValue(), "probe " + i + ": " + out);
            }
        } finally {
            ps.forEach(Process::destroyForcibly);
        }
        List<String[]> log = new ArrayList<>();
        for (String line : Files.readAllLines(dir.resolve("log"), StandardCharsets.UTF_8)) {
            log.add(line.split(" "));
        }
        System.out.println("probes (" + mode + "): pid fence overlap: " + log.stream().map(a -> String.join(" ", a)).toList());
        assertEquals(2 * entries, log.size(), "entries logged");
        return log;
    }

    @Test
    void twoProcessesAreExcluded(@TempDir Path dir) throws Exception {
        List<String[]> log = runProbes("seqd", name("processes"), 2, dir);
        Set<String> pids = new HashSet<>();
        long last = 0;
        for (String[] e : log) {
            pids.add(e[0]);
            assertEquals("false", e[2], "an entry saw the other process inside: " + String.join(" ", e));
            long fence = Long.parseUnsignedLong(e[1]);
            assertTrue(Long.compareUnsigned(fence, last) > 0, "fence " + e[1] + " after " + Long.toUnsignedString(last));
            last = fence;
        }
        assertEquals(2, pids.size(), "entries of both processes");
    }

    @Test
    void aLocalLockPerProcessDoesNotExcludeTwoProcesses(@TempDir Path dir) throws Exception {
        // The negative control of the test above: a ReentrantLock in each process, same check.
        List<String[]> log = runProbes("local", name("processes-local"), 1, dir);
        assertTrue(log.stream().anyMatch(e -> e[2].equals("true")), "the check saw no overlap of two processes that nothing excludes");
    }

    @Test
    void lossMakesTheFenceInvalid() throws Exception {
        String n = name("loss");
        try (Client c = client("loss")) {
            SeqdLock sl = SeqdLock.builder(c, n).ttl(Duration.ofSeconds(3)).build();
            Lock l = sl;
            l.lock();
            l.lock();
            long fence = sl.getFence();
            String sequencer = sl.getSequencer();
            control("/break?kind=lock&name=" + n);
            eventually(Duration.ofSeconds(10), "the hold to be lost", () -> !sl.isLockedByCurrentThread());
            LockOwnershipLostException e = assertThrows(LockOwnershipLostException.class, sl::getFence);
            assertEquals(fence, e.fence());
            assertTrue(e.getMessage().contains(Long.toUnsignedString(fence)), e.getMessage());
            assertEquals("lost", ((LostException) e.getCause()).code(), e.getMessage());
            assertThrows(LockOwnershipLostException.class, sl::getSequencer);
            assertThrows(LockOwnershipLostException.class, l::lock, "a re-entry after the loss");
            assertThrows(LockOwnershipLostException.class, l::tryLock, "a re-entry after the loss");
            assertFalse(c.check(sequencer).valid());
            assertEquals(2, sl.getHoldCount());
            // Each unlock says so, and ends one hold; the last leaves the thread free to lock anew.
            assertThrows(LockOwnershipLostException.class, l::unlock);
            assertThrows(LockOwnershipLostException.class, l::unlock);
            assertEquals(0, sl.getHoldCount());
            assertThrows(IllegalMonitorStateException.class, l::unlock);
            long again = sl.lockAndGetFence();
            assertTrue(Long.compareUnsigned(again, fence) > 0);
            l.unlock();
        }
    }

    @Test
    void noConditions() {
        try (Client c = client("conditions")) {
            Lock l = new SeqdLock(c, name("conditions"));
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, l::newCondition);
            assertTrue(e.getMessage().startsWith("SeqdLock has no conditions: "), e.getMessage());
        }
    }

    @Test
    void aBadNameIsABadRequestFromLock() {
        try (Client c = client("badname")) {
            Lock l = new SeqdLock(c, "a//b");
            BadRequestException e = assertThrows(BadRequestException.class, l::lock);
            assertEquals(400, e.status());
            assertThrows(BadRequestException.class, l::tryLock);
        }
    }
}
