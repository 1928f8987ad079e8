package dev.seqd.fence;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.seqd.client.TestJson;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Guards and the Verifier against sequencers signed by seqd's own signer (the vectors of
 * clients/fences_test.go): the kind and the name are checked; a signature that does not check, a
 * plain sequencer where one is required and anything malformed are refused.
 */
class SignedIT {
    @SuppressWarnings("unchecked")
    static Map<String, Object> data() throws Exception {
        return (Map<String, Object>) TestJson.parse(Files.readString(Path.of(FenceCasesIT.env("SEQD_TEST_FENCE_SIGNED"))));
    }

    @Test
    @SuppressWarnings("unchecked")
    void vectors() throws Exception {
        Map<String, Object> d = data();
        Verifier verifier = Verifier.load(Path.of((String) d.get("verify_keys_file")));
        List<Map<String, Object>> vs = (List<Map<String, Object>>) d.get("vectors");
        assertTrue(vs.size() > 10);
        List<String> wrong = new ArrayList<>();
        for (Map<String, Object> v : vs) {
            Guard g = new Guard((String) v.get("kind"), (String) v.get("name"), Boolean.TRUE.equals(v.get("verify")) ? verifier : null);
            String seq = (String) v.get("sequencer");
            String expect = (String) v.get("expect");
            String got;
            try {
                long t = g.token(seq);
                got = Long.toUnsignedString(t).equals(v.get("token")) && g.token(seq) == t ? "ok" : "token " + Long.toUnsignedString(t);
            } catch (SequencerException e) {
                got = e.reason().name().toLowerCase();
            }
            if (!got.equals(expect)) {
                wrong.add(v.get("about") + " (" + seq + "): " + got + ", want " + expect);
            }
        }
        assertEquals(List.of(), wrong);
    }

    /** The signed sequencers of fence/testdata/dbcases.json, which every language's fences run. */
    @Test
    @SuppressWarnings("unchecked")
    void sharedVectors() throws Exception {
        Map<String, Object> shared = (Map<String, Object>) FenceCasesIT.cases().get("sequencers");
        Verifier verifier = new Verifier(Verifier.parseKeys((String) shared.get("verify_keys")));
        List<Map<String, Object>> vs = (List<Map<String, Object>>) shared.get("vectors");
        assertTrue(vs.size() > 10);
        List<String> wrong = new ArrayList<>();
        for (Map<String, Object> v : vs) {
            Guard g = new Guard((String) v.get("kind"), (String) v.get("lock"), verifier);
            String seq = (String) v.get("sequencer");
            String expect = ((String) v.get("expect")).replaceAll("^wrong_(name|kind)$", "wrong_lock");
            String got;
            try {
                long t = g.token(seq);
                got = Long.toUnsignedString(t).equals(v.get("token")) ? "ok" : "token " + Long.toUnsignedString(t);
            } catch (SequencerException e) {
                got = e.reason().name().toLowerCase();
            }
            if (!got.equals(expect)) {
                wrong.add(v.get("about") + " (" + seq + "): " + got + ", want " + expect);
            }
        }
        assertEquals(List.of(), wrong);
    }

    @Test
    @SuppressWarnings("unchecked")
    void withoutAVerifierAForgedSequencerPasses() throws Exception {
        for (Map<String, Object> v : (List<Map<String, Object>>) data().get("vectors")) {
            if (((String) v.get("about")).startsWith("the token changed")) {
                assertEquals(4712L, new Guard("jobs/orders").token((String) v.get("sequencer")));
                return;
            }
        }
        throw new AssertionError("no tampered vector");
    }

    @Test
    void plainParsing() {
        assertEquals(new Sequencer("election", "scheduler", 52), Sequencer.parse("election:scheduler@52"));
        assertEquals("18446744073709551615", Long.toUnsignedString(Sequencer.parseToken("18446744073709551615")));
        assertThrows(SequencerException.class, () -> Sequencer.parseToken("18446744073709551616"));
        assertThrows(SequencerException.class, () -> Sequencer.parse("jobs//orders@1"));
    }
}
