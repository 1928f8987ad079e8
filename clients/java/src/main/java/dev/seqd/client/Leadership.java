package dev.seqd.client;

/**
 * A held leadership of an election: a {@link Lease} whose token is the term. It renews itself;
 * {@link #close()} resigns, so that another candidate is elected at once.
 */
public final class Leadership extends Lease {
    private volatile String value;

    Leadership(Client client, LeaseInfo info, String value, boolean autoRenew) {
        super(client, Kind.ELECTION, info, autoRenew);
        this.value = value != null ? value : info.owner();
    }

    /** The term: the leadership's token, strictly higher than every earlier leader's. */
    public long term() {
        return token();
    }

    /** The value this leader publishes. */
    public String value() {
        return value;
    }

    /**
     * Publishes a new value (an address, a pod name) as the leader's, keeping the term. It does
     * not renew the leadership.
     *
     * @throws LostException when the leadership has ended (it is then marked lost)
     */
    public void proclaim(String value) {
        ensureHeld();
        LeaseInfo li;
        try {
            li = client.proclaim(name(), leaseId(), token(), value);
        } catch (SeqdException e) {
            LostException end = failed(e, false);
            throw end != null ? end : e;
        }
        this.value = value;
        setInfo(li);
    }
}
