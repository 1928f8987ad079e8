package dev.seqd.client;

import static dev.seqd.client.Harness.name;
import static dev.seqd.client.Harness.plain;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SemaphoreIT {
    @Test
    void limitTwoThreeHoldersNeverMoreThanTwoAtOnce() throws Exception {
        String n = name("sem");
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger entered = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger mostSeenByDaemon = new AtomicInteger();
        List<CompletableFuture<Long>> holders = new ArrayList<>();
        try (Client c = plain()) {
            for (int i = 0; i < 3; i++) {
                holders.add(CompletableFuture.supplyAsync(() -> {
                    try (Lease l = c.semaphore(n, 2, Duration.ofSeconds(2), Duration.ofSeconds(30))) {
                        most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                        int me = entered.incrementAndGet();
                        // Stay until a second holder is in (or this is the last one), then a
                        // little longer: a third admitted too early would be counted.
                        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                        while (inside.get() < 2 && me < 3 && System.nanoTime() - end < 0) {
                            Thread.sleep(10);
                        }
                        Thread.sleep(300);
                        mostSeenByDaemon.accumulateAndGet(c.semaphoreStatus(n).holders(), Math::max);
                        l.ensureHeld();
                        inside.decrementAndGet();
                        assertEquals(2, l.info().limit());
                        return l.token();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }));
            }
            List<Long> tokens = new ArrayList<>();
            for (CompletableFuture<Long> h : holders) {
                tokens.add(h.get(45, TimeUnit.SECONDS));
            }
            // The daemon's count includes a waiter's node while it counts: 3 is no overlap.
            System.out.printf("semaphore limit 2, three holders: at most %d at once (the daemon's holders count reached %d)%n",
                    most.get(), mostSeenByDaemon.get());
            assertEquals(2, most.get(), "holders at once");
            assertEquals(3, tokens.stream().distinct().count(), "tokens " + tokens);
            assertEquals(0, c.semaphoreStatus(n).holders());
        }
    }
}
