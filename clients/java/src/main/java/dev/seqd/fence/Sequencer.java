package dev.seqd.fence;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;

/**
 * One grant: its kind ({@code "lock"} for an exclusive lock, {@code "shared"}, {@code
 * "semaphore"}, {@code "election"}), its lock's (semaphore's, election's) name and its token, an
 * unsigned 64-bit value. Its text form is {@code [<kind>:]<name>@<token>}, e.g. {@code
 * jobs/orders@4711} or {@code election:scheduler@52}.
 */
public record Sequencer(String kind, String name, long token) {
    static final List<String> KINDS = List.of("lock", "shared", "semaphore", "election");
    private static final Pattern TOKEN = Pattern.compile("[1-9][0-9]{0,19}");
    private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._-]+");
    static final Pattern KID = Pattern.compile("[A-Za-z0-9_-]{1,32}");
    static final int SIG_LEN = 86; // an Ed25519 signature in unpadded base64url

    @Override
    public String toString() {
        return ("lock".equals(kind) ? "" : kind + ":") + name + "@" + Long.toUnsignedString(token);
    }

    /**
     * Reads {@code [<kind>:]<name>@<token>}. A signed sequencer parses too, its signature's form
     * checked but not the signature: that takes a {@link Verifier}.
     */
    public static Sequencer parse(String s) {
        return parsePlain(split(s)[0]);
    }

    /** A token from its one spelling: base-10, no sign, no leading zero, 1..2^64-1. */
    public static long parseToken(String s) {
        if (s == null || !TOKEN.matcher(s).matches()) {
            throw invalid("token \"" + clip(s, 24) + "\" is not a base-10 integer in 1..18446744073709551615 without a leading zero");
        }
        try {
            return Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw invalid("token \"" + s + "\" overflows 64 bits");
        }
    }

    /** {plain, kid, sig}: kid and sig empty for a plain sequencer. */
    static String[] split(String s) {
        if (s == null) {
            throw invalid("the sequencer is null");
        }
        int at = s.lastIndexOf('@');
        int dot = at < 0 ? -1 : s.indexOf('.', at);
        if (dot < 0) {
            return new String[] {s, "", ""};
        }
        String rest = s.substring(dot + 1);
        int sep = rest.indexOf('.');
        if (sep < 0) {
            throw invalid("\"" + clip(s, 300) + "\": a signed sequencer is [<kind>:]<name>@<token>.<kid>.<sig>");
        }
        String kid = rest.substring(0, sep), sig = rest.substring(sep + 1);
        if (!KID.matcher(kid).matches()) {
            throw invalid("key id \"" + clip(kid, 40) + "\" must be 1 to 32 of [A-Za-z0-9_-]");
        }
        if (sig.length() != SIG_LEN) {
            throw invalid("the signature is " + sig.length() + " characters, not " + SIG_LEN);
        }
        return new String[] {s.substring(0, dot), kid, sig};
    }

    static Sequencer parsePlain(String s) {
        int at = s.lastIndexOf('@');
        if (at < 0) {
            throw invalid("\"" + clip(s, 300) + "\" has no '@'; want [<kind>:]<name>@<token>");
        }
        String name = s.substring(0, at), kind = "lock";
        int colon = name.indexOf(':');
        if (colon >= 0) {
            kind = name.substring(0, colon);
            name = name.substring(colon + 1);
            if ("lock".equals(kind) || !KINDS.contains(kind)) {
                throw invalid("unknown kind \"" + clip(kind, 40) + "\": want shared, semaphore or election (no prefix for an exclusive lock)");
            }
        }
        checkName(name);
        return new Sequencer(kind, name, parseToken(s.substring(at + 1)));
    }

    static void checkName(String name) {
        int n = name.getBytes(StandardCharsets.UTF_8).length;
        if (n == 0 || n > 256) {
            throw invalid("the lock name \"" + clip(name, 40) + "\" must be 1 to 256 bytes");
        }
        for (String seg : name.split("/", -1)) {
            if (seg.equals(".") || seg.equals("..") || !SEGMENT.matcher(seg).matches()) {
                throw invalid("lock name \"" + name + "\" must be a relative path of [A-Za-z0-9._-] segments, without empty, '.' or '..' segments");
            }
        }
    }

    static SequencerException invalid(String msg) {
        return new SequencerException(SequencerException.Reason.INVALID, msg);
    }

    static String clip(String s, int n) {
        return s == null ? "null" : s.length() <= n ? s : s.substring(0, n);
    }
}
