package dev.seqd.client;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The little JSON this client needs: a reader into maps, lists, strings,
 * booleans, null and {@link Num} (a number kept as its text, so that a
 * 64-bit token is never rounded through a double), and a writer of flat
 * objects. It also reads and writes Go duration strings ("15s", "1m30s").
 */
final class Json {
    private Json() {}

    /** A JSON number as written: read it with the accessor that fits. */
    record Num(String text) {
        /** An unsigned 64-bit integer (a token, an index) in a long. */
        long unsigned() {
            return Long.parseUnsignedLong(text);
        }
    }

    static Object parse(String s) {
        Reader r = new Reader(s);
        r.space();
        Object v = r.value();
        r.space();
        if (r.i != s.length()) {
            throw r.error("trailing data");
        }
        return v;
    }

    /** Parses s, which must be an object. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String s) {
        Object v = parse(s);
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("JSON: want an object");
        }
        return (Map<String, Object>) v;
    }

    private static final class Reader {
        final String s;
        int i;

        Reader(String s) {
            this.s = s;
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at offset " + i);
        }

        void space() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        Object value() {
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{':
                    return object();
                case '[':
                    return array();
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw error("unexpected '" + c + "'");
            }
        }

        Object literal(String word, Object v) {
            if (!s.startsWith(word, i)) {
                throw error("bad literal");
            }
            i += word.length();
            return v;
        }

        Map<String, Object> object() {
            Map<String, Object> m = new LinkedHashMap<>();
            i++;
            space();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            while (true) {
                space();
                if (i >= s.length() || s.charAt(i) != '"') {
                    throw error("want a key");
                }
                String k = string();
                space();
                expect(':');
                space();
                m.put(k, value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect('}');
                return m;
            }
        }

        List<Object> array() {
            List<Object> l = new ArrayList<>();
            i++;
            space();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            while (true) {
                space();
                l.add(value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                    continue;
                }
                expect(']');
                return l;
            }
        }

        void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw error("want '" + c + "'");
            }
            i++;
        }

        String string() {
            i++; // the opening quote
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                    }
                    default -> throw error("bad escape");
                }
            }
        }

        Num number() {
            int start = i;
            if (s.charAt(i) == '-') {
                i++;
            }
            while (i < s.length() && "0123456789.eE+-".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String t = s.substring(start, i);
            if (t.equals("-")) {
                throw error("bad number");
            }
            return new Num(t);
        }
    }

    /** Builds one JSON object; null values are left out. */
    static final class Obj {
        private final StringBuilder b = new StringBuilder("{");

        private Obj key(String k) {
            if (b.length() > 1) {
                b.append(',');
            }
            quote(b, k);
            b.append(':');
            return this;
        }

        Obj str(String k, String v) {
            if (v != null) {
                quote(key(k).b, v);
            }
            return this;
        }

        /** An unsigned 64-bit integer. */
        Obj unsigned(String k, long v) {
            key(k).b.append(Long.toUnsignedString(v));
            return this;
        }

        Obj integer(String k, long v) {
            key(k).b.append(v);
            return this;
        }

        Obj duration(String k, Duration d) {
            return d == null ? this : str(k, formatDuration(d));
        }

        @Override
        public String toString() {
            return b + "}";
        }
    }

    static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    /** A Go duration string: "15s", "1500ms", or nanoseconds when finer. */
    static String formatDuration(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("negative duration " + d);
        }
        long nanos = d.toNanos();
        if (nanos % 1_000_000_000L == 0) {
            return nanos / 1_000_000_000L + "s";
        }
        if (nanos % 1_000_000L == 0) {
            return nanos / 1_000_000L + "ms";
        }
        return nanos + "ns";
    }

    /** Reads a Go duration string such as "15s", "1m30s", "1.5s" or "250ms". */
    static Duration parseDuration(String s) {
        if (s.equals("0")) {
            return Duration.ZERO;
        }
        int i = 0;
        double nanos = 0;
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty duration");
        }
        while (i < s.length()) {
            int start = i;
            while (i < s.length() && (Character.isDigit(s.charAt(i)) || s.charAt(i) == '.')) {
                i++;
            }
            if (start == i) {
                throw new IllegalArgumentException("bad duration " + s);
            }
            double n = Double.parseDouble(s.substring(start, i));
            int ustart = i;
            while (i < s.length() && !Character.isDigit(s.charAt(i)) && s.charAt(i) != '.') {
                i++;
            }
            long unit = switch (s.substring(ustart, i)) {
                case "ns" -> 1L;
                case "us", "\u00b5s", "\u03bcs" -> 1_000L;
                case "ms" -> 1_000_000L;
                case "s" -> 1_000_000_000L;
                case "m" -> 60_000_000_000L;
                case "h" -> 3_600_000_000_000L;
                default -> throw new IllegalArgumentException("bad duration unit in " + s);
            };
            nanos += n * unit;
        }
        return Duration.ofNanos(Math.round(nanos));
    }

    // Accessors of a parsed object, tolerant of absent fields.

    static String str(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof String s ? s : "";
    }

    static long unsigned(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Num n ? n.unsigned() : 0;
    }

    static Long optUnsigned(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Num n ? n.unsigned() : null;
    }

    static int integer(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Num n ? Integer.parseInt(n.text()) : 0;
    }

    static boolean bool(Map<String, Object> m, String k) {
        return Boolean.TRUE.equals(m.get(k));
    }

    static Instant instant(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof String s && !s.isEmpty() ? OffsetDateTime.parse(s).toInstant() : null;
    }

    static Duration duration(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof String s && !s.isEmpty() ? parseDuration(s) : null;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Map ? (Map<String, Object>) v : null;
    }
}
