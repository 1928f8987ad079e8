package dev.seqd.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The client's JSON parser, for tests of other packages (the fence's shared cases). */
public final class TestJson {
    private TestJson() {}

    /** Objects as Map, arrays as List, integers as Long, null as null. */
    public static Object parse(String s) {
        return plain(Json.parse(s));
    }

    private static Object plain(Object v) {
        if (v instanceof Json.Num n) {
            return Long.parseLong(n.text());
        }
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, x) -> out.put((String) k, plain(x)));
            return out;
        }
        if (v instanceof List<?> l) {
            List<Object> out = new ArrayList<>();
            l.forEach(x -> out.add(plain(x)));
            return out;
        }
        return v;
    }
}
