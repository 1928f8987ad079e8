package sequencer_test

import (
	"fmt"
	"testing"

	"github.com/seqd/seqd/api"
)

// A client certificate cannot make its caller the operator: one that
// names admin is refused, so it takes no name the policy denies to
// everyone, lists nothing and breaks nothing.
func TestCertificateNamedAdminIsNotTheOperator(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	st, e := c.call(t, teamB, "POST", "/v1/locks/team-b/x/acquire", `{"owner":"b","ttl":"30s"}`)
	want(t, "team b's grant", st, e, 200, "", "")
	held := tokenOf(e)
	st, e = c.call(t, "cert:admin", "POST", "/v1/locks/team-b/y/acquire", `{"owner":"mallory"}`)
	want(t, "an admin-named certificate's acquire of a name denied to all", st, e, 403, api.CodeForbidden, "admin")
	if n := len(c.contenders(t, "team-b/y")); n != 0 {
		t.Fatalf("the refused acquire left %d contenders", n)
	}
	st, e = c.call(t, "cert:admin", "GET", "/v1/locks?all=1", "")
	want(t, "an admin-named certificate's overview", st, e, 403, api.CodeForbidden, "")
	st, e = c.call(t, "cert:admin", "POST", "/v1/locks/team-b/x/break", fmt.Sprintf(`{"token":%d,"reason":"mine now"}`, held))
	want(t, "an admin-named certificate's break", st, e, 403, api.CodeForbidden, "")
	st, e = c.call(t, teamB, "GET", "/v1/locks/team-b/x", "")
	if want(t, "team b's status", st, e, 200, "", ""); tokenOf(e) != held {
		t.Fatalf("team b's lock now has token %v, want its own %d", e["token"], held)
	}
}

// Certificate names and named tokens are separate namespaces: a
// certificate that names the identity of a named token (ops, which may
// break) is refused, and breaks nothing.
func TestCertificateNamedLikeATokenGetsNoneOfItsRights(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	st, e := c.call(t, teamB, "POST", "/v1/locks/team-b/x/acquire", `{"owner":"b","ttl":"30s"}`)
	want(t, "team b's grant", st, e, 200, "", "")
	held := tokenOf(e)
	st, e = c.call(t, "cert:ops", "POST", "/v1/locks/team-b/x/break", fmt.Sprintf(`{"token":%d,"reason":"oncall"}`, held))
	want(t, "an ops-named certificate's break", st, e, 403, api.CodeForbidden, "tokens file")
	st, e = c.call(t, teamB, "GET", "/v1/locks/team-b/x", "")
	if want(t, "team b's status", st, e, 200, "", ""); tokenOf(e) != held {
		t.Fatalf("team b's lock now has token %v, want its own %d", e["token"], held)
	}
	// The control: the ops token itself may break.
	st, e = c.call(t, "ops", "POST", "/v1/locks/team-b/x/break", fmt.Sprintf(`{"token":%d,"reason":"oncall"}`, held))
	want(t, "the ops token's break", st, e, 200, "", "")
}

// A lease's quota binds the identity that acquired it, whoever renews it:
// another identity that knows the lease id cannot lift its TTL past the
// owner's max_ttl. The control: the owner's own renewal within it passes.
func TestRenewalByAnotherIdentityKeepsTheOwnersMaxTTL(t *testing.T) {
	c := startIDDaemon(t, testPolicy)
	st, e := c.call(t, teamA, "POST", "/v1/locks/team-a/x/acquire", `{"owner":"a","ttl":"30s"}`)
	want(t, "team a's grant", st, e, 200, "", "")
	renew := fmt.Sprintf(`{"lease_id":%q,"token":%d,"ttl":"59m"}`, e["lease_id"], tokenOf(e))
	st, e2 := c.call(t, "ops", "POST", "/v1/locks/team-a/x/renew", renew)
	want(t, "another identity's renewal to 59m", st, e2, 429, api.CodeQuotaExceeded, "at most 1m0s")
	st, e2 = c.call(t, "ops", "POST", "/v1/renew", fmt.Sprintf(`{"leases":[{"name":"team-a/x","lease_id":%q,"token":%d}],"ttl":"59m"}`, e["lease_id"], tokenOf(e)))
	want(t, "another identity's batch renewal to 59m", st, e2, 429, api.CodeQuotaExceeded, "at most 1m0s")
	st, e2 = c.call(t, teamA, "POST", "/v1/locks/team-a/x/renew", fmt.Sprintf(`{"lease_id":%q,"token":%d,"ttl":"1m"}`, e["lease_id"], tokenOf(e)))
	want(t, "the owner's renewal within its max_ttl", st, e2, 200, "", "")
	if ttl := e2["ttl"]; ttl != "1m0s" {
		t.Fatalf("the lease's TTL is %v, want 1m0s", ttl)
	}
}
