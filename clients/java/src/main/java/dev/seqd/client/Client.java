package dev.seqd.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.net.ssl.SSLContext;

/**
 * A client of a seqd daemon's HTTP API (the sidecar next to your app).
 *
 * <p>{@code new Client()} reads its settings from the environment, as every seqd client does:
 *
 * <ul>
 *   <li>{@code SEQD_ADDR}: the daemon's base URL, default {@code http://127.0.0.1:7070};
 *   <li>{@code SEQD_API_TOKEN_FILE}: a file holding the bearer token (trimmed);
 *   <li>{@code SEQD_CACERT}: a PEM CA to trust for https (default: the JDK's trust store);
 *   <li>{@code SEQD_CERT}, {@code SEQD_KEY}: a PEM client certificate and its PKCS#8 key (EC or
 *       RSA), for a daemon that requires client certificates.
 * </ul>
 *
 * {@link #builder()} starts from the same settings and overrides any of them.
 *
 * <p>{@link #lock}, {@link #semaphore} and {@link #campaign} return a {@link Lease} that renews
 * itself and is released by {@code close()}:
 *
 * <pre>{@code
 * try (Client client = new Client();
 *      Lease lease = client.lock("jobs/nightly", Duration.ofSeconds(15), Duration.ofSeconds(10))) {
 *     write(lease.sequencer());          // the resource fences on it
 *     lease.ensureHeld();                // throws LostException once lost
 * }
 * }</pre>
 *
 * The other methods are one HTTP call each. Every failure is a {@link SeqdException} (unchecked)
 * of the type its code names. Tokens and indexes are unsigned 64-bit integers held in a {@code
 * long} (read with {@link Long#parseUnsignedLong}). A Client is safe for concurrent use and
 * reuses its connections; {@link #close()} releases the leases still open.
 */
public final class Client implements AutoCloseable {
    /** The address used when neither the builder nor {@code SEQD_ADDR} names one. */
    public static final String DEFAULT_ADDR = "http://127.0.0.1:7070";

    private static final System.Logger LOG = System.getLogger(Client.class.getName());
    private static final SecureRandom RANDOM = new SecureRandom();
    /** How many characters of a bad answer an error quotes. */
    private static final int QUOTE = 200;

    private final String base;
    private final String authorization;
    private final String owner;
    private final Duration requestTimeout;
    private final HttpClient http;
    final ScheduledThreadPoolExecutor timers;
    private final Set<Lease> open = ConcurrentHashMap.newKeySet();

    /** A client configured from the environment ({@code SEQD_*}, see above). */
    public Client() {
        this(builder());
    }

    private Client(Builder b) {
        String addr = b.addr == null || b.addr.isEmpty() ? DEFAULT_ADDR : b.addr;
        URI u;
        try {
            u = URI.create(addr);
        } catch (IllegalArgumentException e) {
            u = null;
        }
        if (u == null || !("http".equals(u.getScheme()) || "https".equals(u.getScheme()))
                || u.getHost() == null || u.getRawQuery() != null || u.getRawFragment() != null) {
            throw new IllegalArgumentException("SEQD_ADDR \"" + addr
                    + "\" is not the daemon's base URL: write it like http://127.0.0.1:7070");
        }
        this.base = addr.replaceAll("/+$", "");
        String token = b.apiToken;
        if (token == null && b.apiTokenFile != null) {
            try {
                token = Files.readString(b.apiTokenFile, StandardCharsets.UTF_8).strip();
            } catch (IOException e) {
                throw new IllegalArgumentException("SEQD_API_TOKEN_FILE: cannot read " + b.apiTokenFile + ": " + e.getMessage(), e);
            }
            if (token.isEmpty()) {
                throw new IllegalArgumentException("SEQD_API_TOKEN_FILE " + b.apiTokenFile + " is empty");
            }
        }
        this.authorization = token == null || token.isEmpty() ? null : "Bearer " + token;
        this.owner = b.owner != null && !b.owner.isEmpty() ? b.owner : defaultOwner();
        this.requestTimeout = b.requestTimeout;
        HttpClient.Builder hb = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(b.connectTimeout);
        if (b.sslContext != null) {
            hb.sslContext(b.sslContext);
        } else if ("https".equals(u.getScheme()) && (b.caCert != null || b.cert != null || b.key != null)) {
            hb.sslContext(Tls.context(b.caCert, b.cert, b.key));
        }
        this.http = hb.build();
        this.timers = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "seqd-lease-timer");
            t.setDaemon(true);
            return t;
        });
        this.timers.setRemoveOnCancelPolicy(true);
    }

    /** A builder that starts from the environment's {@code SEQD_*} settings. */
    public static Builder builder() {
        return new Builder(System.getenv());
    }

    /**
     * A builder that starts from the settings in env (keys as the environment variables); {@code
     * Map.of()} starts from the defaults alone.
     */
    public static Builder builder(Map<String, String> env) {
        return new Builder(env);
    }

    /** The settings of a {@link Client}; each setter overrides what the environment said. */
    public static final class Builder {
        private String addr;
        private String apiToken;
        private Path apiTokenFile;
        private Path caCert;
        private Path cert;
        private Path key;
        private SSLContext sslContext;
        private String owner;
        private Duration requestTimeout = Duration.ofSeconds(4);
        private Duration connectTimeout = Duration.ofSeconds(4);

        private Builder(Map<String, String> env) {
            addr = env.get("SEQD_ADDR");
            apiTokenFile = path(env.get("SEQD_API_TOKEN_FILE"));
            caCert = path(env.get("SEQD_CACERT"));
            cert = path(env.get("SEQD_CERT"));
            key = path(env.get("SEQD_KEY"));
        }

        private static Path path(String s) {
            return s == null || s.isEmpty() ? null : Path.of(s);
        }

        /** The daemon's base URL, http:// or https://. */
        public Builder addr(String addr) {
            this.addr = addr;
            return this;
        }

        /** The bearer token itself (instead of a file); null sends none. */
        public Builder apiToken(String token) {
            this.apiToken = token;
            this.apiTokenFile = null;
            return this;
        }

        /** A file holding the bearer token; null sends none. */
        public Builder apiTokenFile(Path file) {
            this.apiTokenFile = file;
            this.apiToken = null;
            return this;
        }

        /** A PEM CA certificate to trust for https; null trusts the JDK's default store. */
        public Builder caCert(Path file) {
            this.caCert = file;
            return this;
        }

        /** A PEM client certificate (chain) and its PEM PKCS#8 key, EC or RSA; null for none. */
        public Builder clientCertificate(Path cert, Path key) {
            this.cert = cert;
            this.key = key;
            return this;
        }

        /** An SSLContext of your own; it takes the place of caCert and clientCertificate. */
        public Builder sslContext(SSLContext ctx) {
            this.sslContext = ctx;
            return this;
        }

        /** The owner of this client's leases; default {@code <hostname>:<pid>}. */
        public Builder owner(String owner) {
            this.owner = owner;
            return this;
        }

        /**
         * How long a call may take (default 4s): connecting, sending, the first byte and the whole
         * answer together, on top of the wait it asks the daemon for (an acquire's, a blocking
         * read's).
         */
        public Builder requestTimeout(Duration d) {
            this.requestTimeout = d;
            return this;
        }

        /** How long to wait for a connection (default 4s; the request's own bound still holds). */
        public Builder connectTimeout(Duration d) {
            this.connectTimeout = d;
            return this;
        }

        /** The client; a bad setting is an IllegalArgumentException naming it. */
        public Client build() {
            return new Client(this);
        }
    }

    /** The daemon's base URL. */
    public String addr() {
        return base;
    }

    /** The owner of this client's leases unless a call names another. */
    public String owner() {
        return owner;
    }

    // ---- Holding helpers: a lease that renews itself and is released on close.

    /** {@link #lock(String, Duration, Duration, LockOptions)} with the default options. */
    public Lease lock(String name, Duration ttl, Duration wait) {
        return lock(name, ttl, wait, LockOptions.defaults());
    }

    /**
     * Acquires the lock (waiting up to wait; {@code Duration.ZERO} tries once) and holds it: the
     * lease renews itself every TTL/3 until {@link Lease#close()} releases it. A null ttl takes
     * the daemon's default (15s).
     *
     * @throws HeldException when it was not granted within wait
     */
    public Lease lock(String name, Duration ttl, Duration wait, LockOptions o) {
        long sent = System.nanoTime();
        LeaseInfo info = acquire(name, ttl, wait, o);
        return start(new Lease(this, Kind.LOCK, info, o.autoRenew), sent);
    }

    /** {@link #semaphore(String, int, Duration, Duration, SemaphoreOptions)} with the defaults. */
    public Lease semaphore(String name, int limit, Duration ttl, Duration wait) {
        return semaphore(name, limit, ttl, wait, SemaphoreOptions.defaults());
    }

    /**
     * Takes one of the semaphore's limit slots (every holder must name the same limit) and holds
     * it as {@link #lock} does.
     */
    public Lease semaphore(String name, int limit, Duration ttl, Duration wait, SemaphoreOptions o) {
        long sent = System.nanoTime();
        LeaseInfo info = acquireSemaphore(name, limit, ttl, wait, o);
        return start(new Lease(this, Kind.SEMAPHORE, info, o.autoRenew), sent);
    }

    /** {@link #campaign(String, String, Duration, Duration, CampaignOptions)} with the defaults. */
    public Leadership campaign(String name, String value, Duration ttl, Duration wait) {
        return campaign(name, value, ttl, wait, CampaignOptions.defaults());
    }

    /**
     * Campaigns in the election, waiting up to wait to be elected, and holds the leadership as
     * {@link #lock} holds a lock; {@code close()} resigns. value (an address, a pod name) is
     * published as the leader's; null publishes the owner.
     *
     * @throws HeldException when not elected within wait
     */
    public Leadership campaign(String name, String value, Duration ttl, Duration wait, CampaignOptions o) {
        long sent = System.nanoTime();
        LeaseInfo info = acquireLeadership(name, value, ttl, wait, o);
        return start(new Leadership(this, info, value, o.autoRenew), sent);
    }

    private <L extends Lease> L start(L lease, long sent) {
        open.add(lease);
        try {
            lease.start(sent);
        } catch (RuntimeException e) {
            open.remove(lease);
            throw e;
        }
        return lease;
    }

    void forget(Lease lease) {
        open.remove(lease);
    }

    // ---- Locks: one HTTP call each.

    /** {@code POST /v1/locks/{name}/acquire}: a lease, not renewed by anyone. */
    public LeaseInfo acquire(String name, Duration ttl, Duration wait, LockOptions o) {
        Json.Obj body = new Json.Obj()
                .str("owner", o.owner != null ? o.owner : owner)
                .str("lease_id", o.leaseId != null ? o.leaseId : newLeaseId())
                .duration("ttl", ttl)
                .duration("wait", wait)
                .duration("lock_delay", o.lockDelay)
                .str("mode", o.shared ? "shared" : null);
        return take(Kind.LOCK, name, "acquire", body, plus(wait));
    }

    /** {@code POST /v1/locks/{name}/renew}, keeping the lease's TTL. */
    public LeaseInfo renew(String name, String leaseId, long token) {
        return renew(Kind.LOCK, name, leaseId, token, requestTimeout);
    }

    /** {@code POST /v1/locks/{name}/release}. */
    public void release(String name, String leaseId, long token) {
        release(Kind.LOCK, name, leaseId, token, requestTimeout);
    }

    /** {@code GET /v1/locks/{name}}: who holds it, on any daemon. */
    public LockStatus status(String name) {
        return LockStatus.from(get(path(Kind.LOCK, name), requestTimeout));
    }

    /**
     * {@code GET /v1/locks/{name}?lease_id=ID}: the status with, for this daemon's live lease of
     * that id, how long it is guaranteed ({@link LockStatus#safeFor()}).
     */
    public LockStatus status(String name, String leaseId) {
        return LockStatus.from(get(path(Kind.LOCK, name) + "?lease_id=" + escape(leaseId), requestTimeout));
    }

    /**
     * A blocking read of a lock's state: answers as soon as its index differs from index (a new
     * holder, a waiter coming or going), or once wait (at most 10m) has passed, with the same
     * state.
     */
    public LockStatus waitStatus(String name, long index, Duration wait) {
        return LockStatus.from(get(path(Kind.LOCK, name) + blocking(index, wait), plus(wait)));
    }

    /** {@code GET /v1/locks}: the leases held through this daemon (without their lease ids). */
    @SuppressWarnings("unchecked")
    public List<LeaseInfo> leases() {
        Object v = get("/v1/locks", requestTimeout).get("locks");
        List<LeaseInfo> out = new ArrayList<>();
        if (v instanceof List<?> l) {
            for (Object o : l) {
                out.add(LeaseInfo.from((Map<String, Object>) o));
            }
        }
        return out;
    }

    /**
     * {@code POST /v1/check}: whether the sequencer (passed unchanged, as a holder gave it) is
     * the current holder's. A stale or not-held answer is a result, not an exception.
     */
    public CheckResult check(String sequencer) {
        return check(new Json.Obj().str("sequencer", sequencer));
    }

    /** {@code POST /v1/check} by name and token. */
    public CheckResult check(String name, long token) {
        return check(new Json.Obj().str("name", name).unsigned("token", token));
    }

    private CheckResult check(Json.Obj body) {
        Answer a = await(sendAsync("POST", "/v1/check", body.toString(), requestTimeout));
        if (a.status == 200 || (a.status == 409 && a.body.containsKey("valid"))) {
            return CheckResult.from(a.body);
        }
        throw a.error();
    }

    /**
     * {@code GET /readyz}: whether the daemon answers and its ZooKeeper session is connected
     * (false when it cannot be reached).
     */
    public boolean ready() {
        try {
            return await(sendAsync("GET", "/readyz", null, requestTimeout)).status == 200;
        } catch (UnavailableException e) {
            return false;
        }
    }

    // ---- Semaphores.

    /** {@code POST /v1/semaphores/{name}/acquire}: a slot, not renewed by anyone. */
    public LeaseInfo acquireSemaphore(String name, int limit, Duration ttl, Duration wait, SemaphoreOptions o) {
        Json.Obj body = new Json.Obj()
                .str("owner", o.owner != null ? o.owner : owner)
                .str("lease_id", o.leaseId != null ? o.leaseId : newLeaseId())
                .duration("ttl", ttl)
                .duration("wait", wait)
                .integer("limit", limit);
        return take(Kind.SEMAPHORE, name, "acquire", body, plus(wait));
    }

    /** {@code POST /v1/semaphores/{name}/renew}. */
    public LeaseInfo renewSemaphore(String name, String leaseId, long token) {
        return renew(Kind.SEMAPHORE, name, leaseId, token, requestTimeout);
    }

    /** {@code POST /v1/semaphores/{name}/release}. */
    public void releaseSemaphore(String name, String leaseId, long token) {
        release(Kind.SEMAPHORE, name, leaseId, token, requestTimeout);
    }

    /** {@code GET /v1/semaphores/{name}}: how many hold it. */
    public SemaphoreStatus semaphoreStatus(String name) {
        return SemaphoreStatus.from(get(path(Kind.SEMAPHORE, name), requestTimeout));
    }

    // ---- Elections.

    /**
     * {@code POST /v1/elections/{name}/campaign}: waits up to wait to be elected and answers the
     * leadership's lease (its {@code term}), not renewed by anyone.
     */
    public LeaseInfo acquireLeadership(String name, String value, Duration ttl, Duration wait, CampaignOptions o) {
        Json.Obj body = new Json.Obj()
                .str("owner", o.owner != null ? o.owner : owner)
                .str("value", value)
                .str("lease_id", o.leaseId != null ? o.leaseId : newLeaseId())
                .duration("ttl", ttl)
                .duration("wait", wait);
        return take(Kind.ELECTION, name, "campaign", body, plus(wait));
    }

    /** {@code POST /v1/elections/{name}/renew}. */
    public LeaseInfo renewLeadership(String name, String leaseId, long token) {
        return renew(Kind.ELECTION, name, leaseId, token, requestTimeout);
    }

    /** {@code POST /v1/elections/{name}/resign}. */
    public void resign(String name, String leaseId, long token) {
        release(Kind.ELECTION, name, leaseId, token, requestTimeout);
    }

    /** {@code POST /v1/elections/{name}/proclaim}: the leader publishes a new value, same term. */
    public LeaseInfo proclaim(String name, String leaseId, long token, String value) {
        Json.Obj body = new Json.Obj().str("lease_id", leaseId).unsigned("token", token).str("value", value);
        String p = path(Kind.ELECTION, name) + "/proclaim";
        Answer a = await(sendAsync("POST", p, body.toString(), requestTimeout));
        if (!a.ok()) {
            throw a.error();
        }
        return accept(a, "POST " + p, name, leaseId, token);
    }

    /** {@code GET /v1/elections/{name}}: the leader, on any daemon. */
    public ElectionStatus election(String name) {
        return ElectionStatus.from(get(path(Kind.ELECTION, name), requestTimeout));
    }

    /**
     * A blocking read of an election: answers as soon as its index differs from index (a new
     * leader, a proclaimed value, a candidate coming or going), or once wait has passed.
     */
    public ElectionStatus waitElection(String name, long index, Duration wait) {
        return ElectionStatus.from(get(path(Kind.ELECTION, name) + blocking(index, wait), plus(wait)));
    }

    // ---- Multi-locks.

    /**
     * {@code POST /v1/multilocks/acquire}: every lock of names at once, all or none, under one
     * lease; no two acquirers of sets (or of single locks) can deadlock, whatever names they ask
     * for. A {@link HeldException} once wait has passed.
     */
    public MultiLease acquireMulti(List<String> names, Duration ttl, Duration wait) {
        StringBuilder list = new StringBuilder("[");
        for (String n : names) {
            if (list.length() > 1) {
                list.append(',');
            }
            Json.quote(list, n);
        }
        String leaseId = newLeaseId();
        String body = new Json.Obj().str("owner", owner).str("lease_id", leaseId).duration("ttl", ttl).duration("wait", wait)
                .toString().replaceFirst("^\\{", "{\"names\":" + java.util.regex.Matcher.quoteReplacement(list.toString()) + "],");
        String p = "/v1/multilocks/acquire";
        Answer a = await(sendAsync("POST", p, body, plus(wait)));
        if (!a.ok()) {
            throw a.error();
        }
        String problem = MultiLease.problem(a.body(), List.copyOf(names), leaseId, null);
        if (problem != null) {
            throw protocol("POST " + p, problem, a.status(), a.contentType(), a.text(), null);
        }
        return MultiLease.from(a.body());
    }

    /** {@code POST /v1/multilocks/renew}: every lock of the lease at once, each token kept. */
    public MultiLease renewMulti(MultiLease lease) {
        String p = "/v1/multilocks/renew";
        Answer a = await(sendAsync("POST", p, multiBody(lease), requestTimeout));
        if (!a.ok()) {
            throw a.error();
        }
        List<String> names = lease.locks().stream().map(MultiLease.Lock::name).toList();
        List<Long> tokens = lease.locks().stream().map(MultiLease.Lock::token).toList();
        String problem = MultiLease.problem(a.body(), names, lease.leaseId(), tokens);
        if (problem != null) {
            throw protocol("POST " + p, problem, a.status(), a.contentType(), a.text(), null);
        }
        return MultiLease.from(a.body());
    }

    /** {@code POST /v1/multilocks/release}: ends the lease, every lock at once. */
    public void releaseMulti(MultiLease lease) {
        Answer a = await(sendAsync("POST", "/v1/multilocks/release", multiBody(lease), requestTimeout));
        if (!a.ok()) {
            throw a.error();
        }
    }

    /** {@code GET /v1/multilocks/{leaseId}}: the live lease and how long it is safe, as decoded JSON. */
    public Map<String, Object> multiLockStatus(String leaseId) {
        return get("/v1/multilocks/" + escape(leaseId), requestTimeout);
    }

    private static String multiBody(MultiLease lease) {
        StringBuilder b = new StringBuilder("{\"lease_id\":");
        Json.quote(b, lease.leaseId());
        b.append(",\"locks\":[");
        for (int i = 0; i < lease.locks().size(); i++) {
            MultiLease.Lock l = lease.locks().get(i);
            b.append(i == 0 ? "" : ",").append("{\"name\":");
            Json.quote(b, l.name());
            b.append(",\"token\":").append(Long.toUnsignedString(l.token())).append('}');
        }
        return b.append("]}").toString();
    }

    /**
     * The old name of {@link #acquireLeadership}.
     *
     * @deprecated every seqd client names this call acquireLeadership (docs/clients.md)
     */
    @Deprecated
    public LeaseInfo acquireElection(String name, String value, Duration ttl, Duration wait, CampaignOptions o) {
        return acquireLeadership(name, value, ttl, wait, o);
    }

    /**
     * The old name of {@link #renewLeadership}.
     *
     * @deprecated every seqd client names this call renewLeadership (docs/clients.md)
     */
    @Deprecated
    public LeaseInfo renewElection(String name, String leaseId, long token) {
        return renewLeadership(name, leaseId, token);
    }

    /** Releases the leases still open and stops their renewals. */
    @Override
    public void close() {
        for (Lease l : List.copyOf(open)) {
            l.close();
        }
        timers.shutdownNow();
    }

    // ---- The calls a Lease makes, one code path for every kind.

    LeaseInfo renew(Kind k, String name, String leaseId, long token, Duration timeout) {
        return await(renewAsync(k, name, leaseId, token, timeout)).lease();
    }

    /**
     * A renewal; a 2xx answer that is not this lease (its name, lease id and token) fails the
     * future with a ProtocolException.
     */
    CompletableFuture<Answer> renewAsync(Kind k, String name, String leaseId, long token, Duration timeout) {
        String body = new Json.Obj().str("lease_id", leaseId).unsigned("token", token).toString();
        String p = path(k, name) + "/renew";
        return sendAsync("POST", p, body, timeout).thenApply(a -> {
            if (a.ok()) {
                try {
                    accept(a, "POST " + p, name, leaseId, token);
                } catch (ProtocolException e) {
                    throw new CompletionException(e);
                }
            }
            return a;
        });
    }

    /** An acquire or a campaign: the lease for name under the lease id the body sends. */
    private LeaseInfo take(Kind k, String name, String action, Json.Obj body, Duration timeout) {
        String p = path(k, name) + "/" + action;
        Answer a = await(sendAsync("POST", p, body.toString(), timeout));
        if (!a.ok()) {
            throw a.error();
        }
        return accept(a, "POST " + p, name, Json.str(Json.parseObject(body.toString()), "lease_id"), null);
    }

    /** The lease of a 2xx answer, or a ProtocolException saying what is wrong with it. */
    private LeaseInfo accept(Answer a, String what, String name, String leaseId, Long token) {
        String problem = LeaseInfo.problem(a.body(), name, leaseId, token);
        if (problem != null) {
            throw protocol(what, problem, a.status(), a.contentType(), a.text(), null);
        }
        return LeaseInfo.from(a.body());
    }

    /** The error for an answer that broke the protocol: it names the daemon and quotes the answer. */
    private ProtocolException protocol(String what, String problem, int status, String contentType, String text, Throwable cause) {
        String quote = text.length() > QUOTE ? text.substring(0, QUOTE) : text;
        StringBuilder q = new StringBuilder();
        Json.quote(q, quote);
        return new ProtocolException("the daemon at " + base + " broke the protocol answering " + what + ": " + problem
                + "; it sent " + status + " " + (contentType.isEmpty() ? "(no Content-Type)" : contentType) + ": " + q, status, cause);
    }

    void release(Kind k, String name, String leaseId, long token, Duration timeout) {
        post(k, name, k.release, new Json.Obj().str("lease_id", leaseId).unsigned("token", token), timeout);
    }

    Duration requestTimeout() {
        return requestTimeout;
    }

    // ---- HTTP.

    /**
     * An answer of the daemon: its status, its body as an object (empty if it is none), its
     * Content-Type and its text, the API token taken out.
     */
    record Answer(int status, Map<String, Object> body, String contentType, String text) {
        Answer(int status, Map<String, Object> body) {
            this(status, body, "application/json", "");
        }

        boolean ok() {
            return status >= 200 && status < 300;
        }

        LeaseInfo lease() {
            if (!ok()) {
                throw error();
            }
            return LeaseInfo.from(body);
        }

        SeqdException error() {
            String code = Json.str(body, "code");
            if (code.isEmpty()) {
                code = status == 502 || status == 504 ? "unavailable" : "http_" + status;
            }
            String msg = Json.str(body, "error");
            if (msg.isEmpty()) {
                msg = "the daemon answered " + status;
            }
            return SeqdException.of(status, code, msg + " (" + status + " " + code + ")",
                    Json.optUnsigned(body, "current_token"), null);
        }
    }

    private Map<String, Object> post(Kind k, String name, String action, Json.Obj body, Duration timeout) {
        Answer a = await(sendAsync("POST", path(k, name) + "/" + action, body.toString(), timeout));
        if (!a.ok()) {
            throw a.error();
        }
        return a.body;
    }

    private Map<String, Object> get(String path, Duration timeout) {
        Answer a = await(sendAsync("GET", path, null, timeout));
        if (!a.ok()) {
            throw a.error();
        }
        return a.body;
    }

    /**
     * Sends one request, bounded as a whole by timeout (connect, send, first byte, whole answer:
     * the JDK's own request timeout ends at the headers, and a daemon that drips its body would
     * hold the call for ever). The future fails only with a SeqdException: an unreachable
     * daemon, or a 2xx answer that is not a JSON object sent as application/json, or one cut
     * short (a ProtocolException).
     */
    CompletableFuture<Answer> sendAsync(String method, String path, String body, Duration timeout) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout);
        if (authorization != null) {
            rb.header("Authorization", authorization);
        }
        if (body != null) {
            rb.header("Content-Type", "application/json");
            rb.method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        String what = method + " " + path;
        AtomicReference<HttpResponse.ResponseInfo> head = new AtomicReference<>();
        HttpResponse.BodyHandler<byte[]> handler = info -> {
            head.set(info);
            return HttpResponse.BodySubscribers.ofByteArray();
        };
        CompletableFuture<HttpResponse<byte[]>> exchange = http.sendAsync(rb.build(), handler);
        CompletableFuture<Answer> out = new CompletableFuture<>();
        // A caller that gives up (an interrupted await cancels out) ends the exchange too: the
        // connection closes, and the daemon withdraws an acquire that was still waiting.
        out.whenComplete((a, err) -> {
            if (err instanceof java.util.concurrent.CancellationException) {
                exchange.cancel(true);
            }
        });
        ScheduledFuture<?> bound = timers.schedule(() -> {
            if (out.completeExceptionally(new UnavailableException("cannot reach the daemon at " + base + " (" + what
                    + "): no whole answer within " + Json.formatDuration(timeout), 0, "unavailable", null, null))) {
                exchange.cancel(true);
            }
        }, timeout.toNanos(), TimeUnit.NANOSECONDS);
        exchange.whenComplete((resp, err) -> {
            bound.cancel(false);
            try {
                out.complete(answer(what, resp, err, head.get(), timeout));
            } catch (SeqdException e) {
                out.completeExceptionally(e);
            }
        });
        return out;
    }

    private Answer answer(String what, HttpResponse<byte[]> resp, Throwable err, HttpResponse.ResponseInfo head, Duration timeout) {
        if (err != null) {
            Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
            if (head != null && !(cause instanceof HttpTimeoutException)) {
                String ctype = head.headers().firstValue("Content-Type").orElse("");
                throw protocol(what, "the answer was cut short (" + cause.getMessage() + ")", head.statusCode(), ctype, "", cause);
            }
            int sp = what.indexOf(' ');
            throw unreachable(what.substring(0, sp), what.substring(sp + 1), timeout, err);
        }
        String text = new String(resp.body(), StandardCharsets.UTF_8);
        if (authorization != null) {
            text = text.replace(authorization.substring("Bearer ".length()), "[redacted]");
        }
        String ctype = resp.headers().firstValue("Content-Type").orElse("");
        Map<String, Object> m = Map.of();
        String notJson = null;
        try {
            m = Json.parseObject(text);
        } catch (IllegalArgumentException e) {
            notJson = e.getMessage();
        }
        Answer a = new Answer(resp.statusCode(), m, ctype, text);
        if (!a.ok()) {
            return a;
        }
        String media = ctype.split(";", 2)[0].strip().toLowerCase(java.util.Locale.ROOT);
        if (!media.equals("application/json")) {
            throw protocol(what, "the answer's Content-Type is " + (ctype.isEmpty() ? "missing" : ctype)
                    + ", not application/json", a.status(), ctype, text, null);
        }
        if (notJson != null) {
            throw protocol(what, "the answer is not a JSON object (" + notJson + ")", a.status(), ctype, text, null);
        }
        return a;
    }

    private UnavailableException unreachable(String method, String path, Duration timeout, Throwable err) {
        Throwable cause = err instanceof CompletionException && err.getCause() != null ? err.getCause() : err;
        String why;
        if (cause instanceof HttpTimeoutException) {
            why = "no answer within " + Json.formatDuration(timeout);
        } else if (cause instanceof java.net.ConnectException && cause.getMessage() == null) {
            why = "connection refused";
        } else {
            why = cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : ": " + cause.getMessage());
        }
        return new UnavailableException("cannot reach the daemon at " + base + " (" + method + " " + path + "): " + why,
                0, "unavailable", null, cause);
    }

    /** Waits for a call; a failure is rethrown as the SeqdException it is. */
    static Answer await(CompletableFuture<Answer> f) {
        try {
            return f.get();
        } catch (ExecutionException e) {
            throw asSeqd(e.getCause());
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new SeqdException("interrupted while waiting for the daemon", 0, "interrupted", null, e);
        }
    }

    static SeqdException asSeqd(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof SeqdException s) {
            return s;
        }
        return new SeqdException(String.valueOf(t), 0, "internal", null, t);
    }

    private Duration plus(Duration wait) {
        return wait == null ? requestTimeout : requestTimeout.plus(wait);
    }

    private static String path(Kind k, String name) {
        StringBuilder b = new StringBuilder("/v1/").append(k.collection);
        for (String seg : name.split("/", -1)) {
            b.append('/').append(escape(seg));
        }
        return b.toString();
    }

    private static String blocking(long index, Duration wait) {
        return "?index=" + Long.toUnsignedString(index) + (wait == null ? "" : "&wait=" + Json.formatDuration(wait));
    }

    /** Percent-encodes everything but RFC 3986's unreserved characters. */
    static String escape(String s) {
        StringBuilder b = new StringBuilder();
        for (byte c : s.getBytes(StandardCharsets.UTF_8)) {
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                b.append((char) c);
            } else {
                b.append('%').append(String.format("%02X", c & 0xff));
            }
        }
        return b.toString();
    }

    /** 32 lowercase hex digits: the lease id of a new acquire, chosen here so a retry can name it. */
    static String newLeaseId() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private static String defaultOwner() {
        String host = System.getenv("HOSTNAME"); // set in containers; no lookup needed then
        if (host == null || host.isEmpty()) {
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                host = "localhost";
            }
        }
        return host + ":" + ProcessHandle.current().pid();
    }

    static void warn(String msg, Throwable t) {
        LOG.log(System.Logger.Level.WARNING, msg, t);
    }
}
