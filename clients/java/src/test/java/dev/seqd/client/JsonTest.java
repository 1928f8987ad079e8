package dev.seqd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The JSON, duration and error mapping this client does by hand; no daemon needed. */
class JsonTest {
    @Test
    void tokensAreReadAsUnsigned64BitIntegersExactly() {
        // 2^64-1 does not fit a signed long, and 2^53+1 does not survive a double.
        LeaseInfo l = LeaseInfo.from(Json.parseObject(
                "{\"name\":\"a\",\"token\":18446744073709551615,\"term\":9007199254740993,\"ttl\":\"15s\"}"));
        assertEquals("18446744073709551615", Long.toUnsignedString(l.token()));
        assertEquals(-1L, l.token());
        assertEquals(9007199254740993L, l.term());
        assertTrue(Long.compareUnsigned(l.token(), l.term()) > 0, "unsigned order");
        assertEquals("{\"token\":18446744073709551615}", new Json.Obj().unsigned("token", -1L).toString());
    }

    @Test
    void readsNestedValuesEscapesAndNulls() {
        Map<String, Object> m = Json.parseObject(
                " {\"s\":\"a\\\"b\\\\c\\n\\u00e9\",\"l\":[1,true,null,{}],\"o\":{\"x\":false},\"n\":null} ");
        assertEquals("a\"b\\c\n\u00e9", m.get("s"));
        assertEquals(List.of(new Json.Num("1"), true, Map.of()), ((List<?>) m.get("l")).stream()
                .filter(v -> v != null).toList());
        assertEquals(Map.of("x", false), m.get("o"));
        assertTrue(m.containsKey("n"));
        ElectionStatus e = ElectionStatus.from(Json.parseObject("{\"name\":\"e\",\"leader\":null,\"index\":7}"));
        assertTrue(e.leader().isEmpty());
        assertEquals(7, e.index());
    }

    @Test
    void refusesMalformedJson() {
        for (String bad : new String[] {"", "{", "{\"a\":}", "{\"a\":1,}", "[1 2]", "{\"a\":1} x", "\"\\x\"", "tru"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
    }

    @Test
    void writesStringsEscapedAndLeavesOutNulls() {
        String got = new Json.Obj().str("owner", "h\"o\\st\n\u0001").str("lease_id", null)
                .duration("ttl", Duration.ofMillis(1500)).duration("wait", null).integer("limit", 2).toString();
        assertEquals("{\"owner\":\"h\\\"o\\\\st\\n\\u0001\",\"ttl\":\"1500ms\",\"limit\":2}", got);
        assertEquals(Map.of("owner", "h\"o\\st\n\u0001", "ttl", "1500ms", "limit", new Json.Num("2")), Json.parseObject(got));
    }

    @Test
    void goDurations() {
        Map<String, Duration> cases = Map.of(
                "15s", Duration.ofSeconds(15),
                "1m30s", Duration.ofSeconds(90),
                "1.5s", Duration.ofMillis(1500),
                "250ms", Duration.ofMillis(250),
                "1h0m0s", Duration.ofHours(1),
                "2\u00b5s", Duration.ofNanos(2000),
                "0s", Duration.ZERO);
        cases.forEach((s, d) -> assertEquals(d, Json.parseDuration(s), s));
        assertEquals("2s", Json.formatDuration(Duration.ofSeconds(2)));
        assertEquals("1500ms", Json.formatDuration(Duration.ofMillis(1500)));
        assertEquals("7ns", Json.formatDuration(Duration.ofNanos(7)));
        for (String bad : new String[] {"", "s", "5", "5x", "-1s"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parseDuration(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> Json.formatDuration(Duration.ofSeconds(-1)));
    }

    @Test
    void errorsAreTypedByStatusAndCode() {
        record Case(int status, String code, Class<? extends SeqdException> type) {}
        for (Case c : List.of(
                new Case(409, "held", HeldException.class),
                new Case(409, "stale_token", StaleTokenRefusedException.class),
                new Case(409, "lost", LostException.class),
                new Case(409, "broken", LostException.class),
                new Case(503, "unavailable", UnavailableException.class),
                new Case(0, "unavailable", UnavailableException.class),
                new Case(401, "unauthorized", UnauthorizedException.class),
                new Case(400, "bad_request", BadRequestException.class),
                new Case(403, "forbidden", ForbiddenException.class),
                new Case(429, "quota_exceeded", QuotaExceededException.class),
                new Case(403, "bad_signature", SeqdException.class),
                new Case(409, "limit_mismatch", SeqdException.class))) {
            SeqdException e = SeqdException.of(c.status, c.code, "m", 42L, null);
            assertEquals(c.type, e.getClass(), c.code);
            assertEquals(c.code, e.code());
            assertEquals(c.status, e.status());
            assertEquals(42L, e.currentToken().getAsLong());
        }
        Client.Answer a = new Client.Answer(409, Json.parseObject(
                "{\"error\":\"lock \\\"x\\\" is held\",\"code\":\"held\",\"current_token\":18446744073709551615}"));
        SeqdException e = a.error();
        assertInstanceOf(HeldException.class, e);
        assertEquals(-1L, e.currentToken().getAsLong());
        assertEquals("lock \"x\" is held (409 held)", e.getMessage());
        assertFalse(SeqdException.of(409, "held", "m", null, null).currentToken().isPresent());
    }

    @Test
    void namesArePathEscapedSegmentBySegment() {
        assertEquals("a.b-c_d~", Client.escape("a.b-c_d~"));
        assertEquals("a%20b%2Fc%C3%A9", Client.escape("a b/c\u00e9"));
        assertEquals(32, Client.newLeaseId().length());
        assertTrue(Client.newLeaseId().matches("[0-9a-f]{32}"));
    }

    @Test
    void settingsAreCheckedAtBuild() {
        assertEquals(Client.DEFAULT_ADDR, Client.builder(Map.of()).build().addr());
        assertEquals("http://h:1", Client.builder(Map.of("SEQD_ADDR", "http://h:1/")).build().addr());
        for (String bad : new String[] {"127.0.0.1:7070", "ftp://h:1", "http://h:1/?q=1", "http://"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Client.builder(Map.of("SEQD_ADDR", bad)).build(), bad);
            assertTrue(e.getMessage().contains("SEQD_ADDR"), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Client.builder(
                Map.of("SEQD_ADDR", "https://h:1", "SEQD_CERT", "/nonexistent/cert.pem")).build());
        assertTrue(e.getMessage().contains("SEQD_KEY"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Client.builder(
                Map.of("SEQD_API_TOKEN_FILE", "/nonexistent/token")).build());
        assertTrue(e.getMessage().contains("SEQD_API_TOKEN_FILE"), e.getMessage());
        assertTrue(Client.builder(Map.of()).build().owner().endsWith(":" + ProcessHandle.current().pid()));
        assertEquals("me", Client.builder(Map.of()).owner("me").build().owner());
    }
}
