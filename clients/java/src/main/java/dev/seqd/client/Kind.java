package dev.seqd.client;

/** The lease kinds: one row each, so that their calls share one code path. */
enum Kind {
    LOCK("locks", "acquire", "release"),
    SEMAPHORE("semaphores", "acquire", "release"),
    ELECTION("elections", "campaign", "resign");

    final String collection;
    final String acquire;
    final String release;

    Kind(String collection, String acquire, String release) {
        this.collection = collection;
        this.acquire = acquire;
        this.release = release;
    }
}
