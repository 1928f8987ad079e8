package dev.seqd.fence;

/**
 * The lock that guards some data: {@link #token} takes the sequencer a holder sent and returns
 * its token if it is of that lock and kind (and, with a {@link Verifier}, signed by seqd), and
 * throws a {@link SequencerException} otherwise. The kind is {@code "lock"} (an exclusive lock),
 * {@code "election"} (a leader's term), {@code "shared"} or {@code "semaphore"}: tokens of another
 * kind follow another count.
 */
public final class Guard {
    private final String kind;
    private final String name;
    private final Verifier verifier;

    /** A guard for the exclusive lock {@code name}, taking plain sequencers. */
    public Guard(String name) {
        this("lock", name, null);
    }

    /** A guard for {@code name} of {@code kind}; with a verifier it takes signed sequencers only. */
    public Guard(String kind, String name, Verifier verifier) {
        if (!Sequencer.KINDS.contains(kind)) {
            throw new IllegalArgumentException("unknown kind \"" + kind + "\": want one of " + String.join(", ", Sequencer.KINDS));
        }
        Sequencer.checkName(name);
        this.kind = kind;
        this.name = name;
        this.verifier = verifier;
    }

    /** The token of sequencer, if it is of this guard's lock and kind. */
    public long token(String sequencer) {
        Sequencer s = verifier != null ? verifier.verify(sequencer) : Sequencer.parse(sequencer);
        if (!s.kind().equals(kind) || !s.name().equals(name)) {
            String want = new Sequencer(kind, name, 1).toString();
            throw new SequencerException(SequencerException.Reason.WRONG_LOCK,
                    "\"" + Sequencer.clip(s.toString(), 300) + "\" is not a sequencer of \"" + want.substring(0, want.length() - 2) + "\"");
        }
        return s.token();
    }
}
