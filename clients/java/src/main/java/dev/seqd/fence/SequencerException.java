package dev.seqd.fence;

/** A sequencer refused before anything was written or any max moved; {@link #reason()} says why. */
public class SequencerException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** Why a sequencer was refused. */
    public enum Reason {
        /** Not {@code [<kind>:]<name>@<token>}, signed or not. */
        INVALID,
        /** A verifying resource was given a plain sequencer. */
        UNSIGNED,
        /** The signature does not check, or its key id is not a verifying key. */
        BAD_SIGNATURE,
        /** A sequencer of another lock or of another kind than the guard's. */
        WRONG_LOCK
    }

    private final Reason reason;

    public SequencerException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
