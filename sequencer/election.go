package sequencer

import (
	"context"
	"errors"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/zklock"
)

// Elections: a campaign is a lease on an election (zklock.Election) whose
// token is the leader's term; renew and resign are a lock lease's renew and
// release. The daemon's own campaigns (Config.Campaigns) run for as long as
// the Service does.

func validateValue(value string) error {
	if len(value) > api.MaxValueBytes {
		return badRequest("value is %d bytes, longer than %d", len(value), api.MaxValueBytes)
	}
	return nil
}

// campaign stands for election name on req.Owner's behalf with req.Value
// (default the owner), waiting up to req.Wait to be elected (0 tries
// once), and returns the leadership as a lease whose Term is its token.
func (s *Service) campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Lease, error) {
	g, err := readGrant(api.Elections, name, req.Owner, req.LeaseID, req.TTL, req.Wait)
	if err != nil {
		return api.Lease{}, err
	}
	if err := validateValue(req.Value); err != nil {
		return api.Lease{}, err
	}
	sess, err := s.liveSession()
	if err != nil {
		return api.Lease{}, err
	}
	out, ok, err := s.retry(g, func(l *lease) string {
		switch {
		case l.kind != fence.KindElection:
			return "kind"
		case req.Value != "" && req.Value != l.value:
			return "value"
		}
		return ""
	})
	if ok || err != nil {
		return out, err
	}
	value := req.Value
	if value == "" {
		value = g.owner
	}
	e, err := s.recipes.election(sess, name)
	if err != nil {
		return api.Lease{}, err
	}
	campaign := func(ctx context.Context) (*zklock.Leadership, error) { return e.Campaign(ctx, []byte(value)) }
	try := func(ctx context.Context) (*zklock.Leadership, error) { return e.TryCampaign(ctx, []byte(value)) }
	lead, err := waitFor(ctx, g.wait, campaign, try)
	if err != nil {
		return api.Lease{}, s.grantError(ctx, sess, fence.KindElection, name, err, func(ctx context.Context) uint64 {
			if l, lerr := e.Leader(ctx); lerr == nil {
				return l.Term
			}
			return 0
		})
	}
	return s.admit(ctx, &lease{kind: fence.KindElection, grant: lead.Grant, lead: lead, value: value}, g, 0)
}

// proclaim sets the value of a live leadership lease, keeping its term.
func (s *Service) proclaim(ctx context.Context, name string, req api.ProclaimRequest) (api.Lease, error) {
	if err := validateValue(req.Value); err != nil {
		return api.Lease{}, err
	}
	lr := api.LeaseRequest{LeaseID: req.LeaseID, Token: req.Token}
	l, err := s.leaseFor(ctx, api.Elections, name, lr, metrics.SourceRenew)
	if err != nil {
		return api.Lease{}, err
	}
	if _, err := s.liveSession(); err != nil {
		return api.Lease{}, err
	}
	if err := l.lead.Proclaim(ctx, []byte(req.Value)); err != nil {
		if errors.Is(err, zklock.ErrLockLost) || errors.Is(err, zklock.ErrReleased) {
			return api.Lease{}, s.lostError(l, req.Token)
		}
		if ctx.Err() != nil {
			return api.Lease{}, ctx.Err()
		}
		return api.Lease{}, unavailable("zookeeper did not take the value", err)
	}
	var out api.Lease
	s.leases.with(func() {
		l.value = req.Value
		out = l.view()
	})
	return out, nil
}

// readElection reads an election's leader from ZooKeeper.
func (s *Service) readElection(ctx context.Context, name string) (api.ElectionStatus, error) {
	if err := validateName(api.Elections, name); err != nil {
		return api.ElectionStatus{}, err
	}
	l, err := s.leader(ctx, name)
	if err != nil {
		return api.ElectionStatus{}, err
	}
	st := s.electionStatus(name, l)
	return st, s.queueElection(ctx, &st)
}

// electionStatus is the API form of l; self is decided now, from the
// leaderships this daemon holds.
func (s *Service) electionStatus(name string, l zklock.Leader) api.ElectionStatus {
	st := api.ElectionStatus{Name: name, Candidates: l.Candidates, Index: l.Index}
	if !l.Elected {
		return st
	}
	st.Leader = &api.LeaderView{Value: string(l.Value), Term: l.Term, Since: l.Since.UTC()}
	owner, ok := s.selfLeads(name, l.Term)
	st.Leader.Owner, st.Self = owner, ok
	return st
}

// selfLeads reports whether a leadership of this daemon with term is live
// now, and its owner.
func (s *Service) selfLeads(name string, term uint64) (string, bool) {
	sess, err := s.session()
	if err != nil || !sess.Live() {
		return "", false
	}
	if owner, ok := s.leases.ownerOf(api.Elections, name, term, true); ok {
		return owner, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.own[name]; c != nil && c.lead != nil && c.lead.Err() == nil && c.lead.Term == term {
		return c.owner, true
	}
	return "", false
}
