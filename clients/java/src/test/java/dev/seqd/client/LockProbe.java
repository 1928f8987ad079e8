package dev.seqd.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Run in a child JVM by SeqdLockIT: enters a critical section under a {@link Lock} several times
 * and records, for each entry, whether another process was inside at the same time.
 *
 * <pre>
 *   LockProbe seqd|local NAME ENTRIES DIR
 * </pre>
 *
 * {@code seqd} locks a {@link SeqdLock} on a {@link Client} configured by the environment alone
 * (SEQD_ADDR, SEQD_API_TOKEN_FILE, …); {@code local} a {@link ReentrantLock} of its own, which
 * excludes nobody outside this JVM. The probe writes DIR/ready-PID, waits for DIR/go, then per
 * entry: lock; create DIR/inside-PID; watch up to 1 s for another process's inside- file;
 * append "PID FENCE OVERLAP" to DIR/log; delete its file; unlock.
 */
public final class LockProbe {
    private LockProbe() {}

    private static final long WATCH_MILLIS = 1000;

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String name = args[1];
        int entries = Integer.parseInt(args[2]);
        Path dir = Path.of(args[3]);
        long pid = ProcessHandle.current().pid();
        try (Client client = new Client()) {
            Lock lock = mode.equals("seqd") ? new SeqdLock(client, name) : new ReentrantLock();
            Files.writeString(dir.resolve("ready-" + pid), "");
            long give = System.nanoTime() + 60_000_000_000L;
            while (!Files.exists(dir.resolve("go"))) {
                if (System.nanoTime() - give > 0) {
                    throw new IllegalStateException("no go file within 60s");
                }
                Thread.sleep(10);
            }
            Path mine = dir.resolve("inside-" + pid);
            for (int i = 0; i < entries; i++) {
                lock.lock();
                try {
                    Files.createFile(mine);
                    boolean overlap = false;
                    long end = System.nanoTime() + WATCH_MILLIS * 1_000_000;
                    while (!overlap && System.nanoTime() - end < 0) {
                        overlap = othersInside(dir, mine);
                        Thread.sleep(10);
                    }
                    String fence = lock instanceof SeqdLock s ? Long.toUnsignedString(s.getFence()) : "0";
                    Files.writeString(dir.resolve("log"), pid + " " + fence + " " + overlap + "\n",
                            StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                    Files.delete(mine);
                } finally {
                    lock.unlock();
                }
            }
        }
    }

    private static boolean othersInside(Path dir, Path mine) throws IOException {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "inside-*")) {
            for (Path p : ds) {
                if (!p.equals(mine)) {
                    return true;
                }
            }
        }
        return false;
    }
}
