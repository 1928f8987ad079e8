package dev.seqd.client;

/** The options of a campaign, beyond the election's name, value, TTL and wait. Immutable. */
public final class CampaignOptions {
    final String owner;
    final String leaseId;
    final boolean autoRenew;

    private CampaignOptions(String owner, String leaseId, boolean autoRenew) {
        this.owner = owner;
        this.leaseId = leaseId;
        this.autoRenew = autoRenew;
    }

    /** The client's owner, a fresh lease id, renewed. */
    public static CampaignOptions defaults() {
        return new CampaignOptions(null, null, true);
    }

    /** Who campaigns; default the client's owner, host:pid. */
    public CampaignOptions owner(String owner) {
        return new CampaignOptions(owner, leaseId, autoRenew);
    }

    /** The lease id to campaign under, as {@link LockOptions#leaseId}. */
    public CampaignOptions leaseId(String leaseId) {
        return new CampaignOptions(owner, leaseId, autoRenew);
    }

    /** Whether the {@link Leadership} renews itself, as {@link LockOptions#autoRenew}. */
    public CampaignOptions autoRenew(boolean autoRenew) {
        return new CampaignOptions(owner, leaseId, autoRenew);
    }
}
