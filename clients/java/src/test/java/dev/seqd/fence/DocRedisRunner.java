package dev.seqd.fence;

/**
 * Runs a Redis example of docs/fencing.md (a class with {@code static void
 * ship(RedisFence.ScriptRunner)}) with the test-only RESP connection as the runner, on the Redis
 * at REDIS_HOST:REDIS_PORT.
 */
public final class DocRedisRunner {
    private DocRedisRunner() {}

    public static void main(String[] args) throws Exception {
        try (Resp redis = new Resp(System.getenv("REDIS_HOST"), Integer.parseInt(System.getenv("REDIS_PORT")), 0)) {
            Class.forName(args[0]).getMethod("ship", RedisFence.ScriptRunner.class).invoke(null, redis);
        }
    }
}
