package dev.seqd.client;

import java.time.Instant;
import java.util.Map;
import java.util.Optional;

/**
 * An election's state ({@code GET /v1/elections/{name}}), read from ZooKeeper.
 *
 * @param name the election's name
 * @param leader the leader, empty when nobody leads
 * @param candidates every candidate, the leader included
 * @param index opaque (unsigned): send it back to {@link Client#waitElection} to wait for a
 *     change
 * @param self whether a campaign through the daemon asked leads
 */
public record ElectionStatus(
        String name, Optional<Leader> leader, int candidates, long index, boolean self) {

    /**
     * An election's leader.
     *
     * @param owner the leader's owner when it campaigns through the daemon asked, "" otherwise
     * @param value the value it publishes (an address, a pod name)
     * @param term its term, unsigned, strictly rising from one leader to the next
     * @param since when it took office
     */
    public record Leader(String owner, String value, long term, Instant since) {}

    static ElectionStatus from(Map<String, Object> m) {
        Map<String, Object> l = Json.obj(m, "leader");
        Optional<Leader> leader = l == null
                ? Optional.empty()
                : Optional.of(new Leader(Json.str(l, "owner"), Json.str(l, "value"),
                        Json.unsigned(l, "term"), Json.instant(l, "since")));
        return new ElectionStatus(Json.str(m, "name"), leader, Json.integer(m, "candidates"),
                Json.unsigned(m, "index"), Json.bool(m, "self"));
    }
}
