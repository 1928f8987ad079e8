package dev.seqd.fence;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Checks signed sequencers ({@code <plain>.<kid>.<sig>}, an Ed25519 signature of {@code
 * seqd-sequencer-v2:<plain>}) with public keys only: a resource can check tokens, never mint them.
 * It remembers the sequencers it verified (a bounded number), so a holder's repeated sequencer
 * costs a map lookup. Thread-safe.
 */
public final class Verifier {
    private static final byte[] SPKI_ED25519 = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
    private static final String CONTEXT = "seqd-sequencer-v2:";
    private static final int CACHE = 1 << 14;

    private final Map<String, PublicKey> keys = new HashMap<>();
    private final Map<String, Sequencer> verified = new ConcurrentHashMap<>();

    /** A verifier for keys: key id to the 32 bytes of an Ed25519 public key. */
    public Verifier(Map<String, byte[]> keys) {
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("a verifier needs at least one key");
        }
        try {
            KeyFactory kf = KeyFactory.getInstance("Ed25519");
            for (Map.Entry<String, byte[]> e : keys.entrySet()) {
                if (!Sequencer.KID.matcher(e.getKey()).matches()) {
                    throw new IllegalArgumentException("key id \"" + e.getKey() + "\" must be 1 to 32 of [A-Za-z0-9_-]");
                }
                if (e.getValue().length != 32) {
                    throw new IllegalArgumentException("key \"" + e.getKey() + "\" is " + e.getValue().length + " bytes, not 32");
                }
                byte[] der = new byte[SPKI_ED25519.length + 32];
                System.arraycopy(SPKI_ED25519, 0, der, 0, SPKI_ED25519.length);
                System.arraycopy(e.getValue(), 0, der, SPKI_ED25519.length, 32);
                this.keys.put(e.getKey(), kf.generatePublic(new X509EncodedKeySpec(der)));
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK has no Ed25519", e);
        }
    }

    /** The keys of a verify keys file ({@code seqd keygen}): one line {@code <kid> <base64 public key>} per key. */
    public static Map<String, byte[]> parseKeys(String text) {
        Map<String, byte[]> keys = new LinkedHashMap<>();
        String[] lines = text.split("\r?\n");
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 2 || !Sequencer.KID.matcher(f[0]).matches()) {
                throw new IllegalArgumentException("line " + (i + 1) + ": want \"<kid> <base64 public key>\"");
            }
            byte[] raw;
            try {
                raw = Base64.getDecoder().decode(f[1]);
            } catch (IllegalArgumentException e) {
                raw = new byte[0];
            }
            if (raw.length != 32) {
                throw new IllegalArgumentException("line " + (i + 1) + ": the public key of \"" + f[0] + "\" is not 32 bytes of base64");
            }
            if (keys.put(f[0], raw) != null) {
                throw new IllegalArgumentException("line " + (i + 1) + ": key id \"" + f[0] + "\" appears twice");
            }
        }
        if (keys.isEmpty()) {
            throw new IllegalArgumentException("no key found");
        }
        return keys;
    }

    /** A verifier for the keys of a verify keys file. */
    public static Verifier load(Path file) throws IOException {
        try {
            return new Verifier(parseKeys(Files.readString(file)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
        }
    }

    /**
     * The sequencer of a signed sequencer whose signature checks; a {@link SequencerException}
     * ({@code UNSIGNED}, {@code BAD_SIGNATURE} or {@code INVALID}) otherwise.
     */
    public Sequencer verify(String s) {
        Sequencer hit = s == null ? null : verified.get(s);
        if (hit != null) {
            return hit;
        }
        String[] parts = Sequencer.split(s);
        String plain = parts[0], kid = parts[1], sig = parts[2];
        if (kid.isEmpty()) {
            throw new SequencerException(SequencerException.Reason.UNSIGNED, "\"" + Sequencer.clip(s, 300) + "\" has no signature");
        }
        Sequencer seq = Sequencer.parsePlain(plain);
        PublicKey key = keys.get(kid);
        if (key == null) {
            throw new SequencerException(SequencerException.Reason.BAD_SIGNATURE, "unknown key id \"" + kid + "\"");
        }
        if (!checks(key, plain, sig)) {
            throw new SequencerException(SequencerException.Reason.BAD_SIGNATURE,
                    "the signature of \"" + Sequencer.clip(plain, 300) + "\" does not check with key \"" + kid + "\"");
        }
        if (verified.size() >= CACHE) {
            verified.clear();
        }
        verified.put(s, seq);
        return seq;
    }

    private static boolean checks(PublicKey key, String plain, String sig) {
        byte[] raw;
        try {
            raw = Base64.getUrlDecoder().decode(sig);
        } catch (IllegalArgumentException e) {
            return false;
        }
        // One spelling per signature: no unused bits set in the last character.
        if (raw.length != 64 || !Base64.getUrlEncoder().withoutPadding().encodeToString(raw).equals(sig)) {
            return false;
        }
        try {
            Signature v = Signature.getInstance("Ed25519");
            v.initVerify(key);
            v.update((CONTEXT + plain).getBytes(StandardCharsets.UTF_8));
            return v.verify(raw);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }
}
