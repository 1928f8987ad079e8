package dev.seqd.client;

import java.util.Map;

/**
 * A semaphore's state ({@code GET /v1/semaphores/{name}}).
 *
 * @param name the semaphore's name
 * @param holders how many lease nodes it has in ZooKeeper, on every daemon
 */
public record SemaphoreStatus(String name, int holders) {
    static SemaphoreStatus from(Map<String, Object> m) {
        return new SemaphoreStatus(Json.str(m, "name"), Json.integer(m, "holders"));
    }
}
