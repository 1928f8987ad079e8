package dev.seqd.client;

import static dev.seqd.client.Harness.eventually;
import static dev.seqd.client.Harness.name;
import static dev.seqd.client.Harness.plain;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ElectionIT {
    @Test
    void twoCandidatesOneLeaderThenHandOverOnResign() throws Exception {
        String n = name("elect");
        Duration ttl = Duration.ofSeconds(2);
        try (Client c = plain()) {
            Leadership a = c.campaign(n, "a", ttl, Duration.ofSeconds(5), CampaignOptions.defaults().owner("cand-a"));
            CompletableFuture<Leadership> b = CompletableFuture.supplyAsync(
                    () -> c.campaign(n, "b", ttl, Duration.ofSeconds(30), CampaignOptions.defaults().owner("cand-b")));
            eventually(Duration.ofSeconds(10), "two candidates", () -> c.election(n).candidates() == 2);
            ElectionStatus st = c.election(n);
            assertEquals("a", st.leader().orElseThrow().value());
            assertEquals(a.term(), st.leader().orElseThrow().term());
            assertTrue(st.self());
            assertFalse(b.isDone(), "the second candidate was elected beside the leader");

            // A blocking read wakes on a proclaimed value (same term).
            CompletableFuture<ElectionStatus> next =
                    CompletableFuture.supplyAsync(() -> c.waitElection(n, st.index(), Duration.ofSeconds(30)));
            a.proclaim("a2");
            ElectionStatus proclaimed = next.get(20, TimeUnit.SECONDS);
            assertEquals("a2", proclaimed.leader().orElseThrow().value());
            assertEquals(a.term(), proclaimed.leader().orElseThrow().term());
            assertEquals("a2", a.value());

            a.close(); // resigns: b is elected at once
            Leadership lb = b.get(20, TimeUnit.SECONDS);
            try (lb) {
                assertTrue(Long.compareUnsigned(lb.term(), a.term()) > 0, "terms " + a.term() + " then " + lb.term());
                ElectionStatus after = c.election(n);
                assertEquals("b", after.leader().orElseThrow().value());
                assertEquals("cand-b", after.leader().orElseThrow().owner());
                assertEquals(lb.term(), after.leader().orElseThrow().term());
                assertEquals(1, after.candidates());
                assertTrue(a.lost().isCancelled(), "a clean resign is no loss");
                assertTrue(lb.isHeld());
            }
            eventually(Duration.ofSeconds(10), "nobody to lead", () -> c.election(n).leader().isEmpty());
        }
    }
}
