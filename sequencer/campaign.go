package sequencer

import (
	"context"
	"time"

	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/zklock"
)

// The daemon's own campaigns: the sidecar pattern, where the app next to
// the daemon asks GET /v1/elections/{name} and reads self.

// startCampaigns starts a goroutine per Candidate; Close stops them first,
// resigning, so that the next leader is elected at once.
func (s *Service) startCampaigns() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopCampaigns = cancel
	for _, c := range s.cfg.Campaigns {
		oc := &ownCampaign{Candidate: c, owner: s.cfg.Identity}
		s.mu.Lock()
		s.own[c.Name] = oc
		s.mu.Unlock()
		s.campaigns.Add(1)
		go s.runCampaign(ctx, oc)
	}
}

// runCampaign campaigns while the session is up, holds office until the
// leadership is lost or ctx ends (then it resigns), and campaigns again.
func (s *Service) runCampaign(ctx context.Context, c *ownCampaign) {
	defer s.campaigns.Done()
	key := watchKey{kind: fence.KindElection, name: c.Name}
	w := s.watches.subscribe(key) // leader changes are observed (and counted) for as long as the campaign runs
	defer s.watches.unsubscribe(w)
	s.m.Leader(c.Name, false)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		lead, err := s.campaignOnce(ctx, c)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("campaign", "election", c.Name, "err", err, "retry_in", backoff)
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff): // a retry pace, not logic
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		s.hold(ctx, c, lead)
	}
}

func (s *Service) campaignOnce(ctx context.Context, c *ownCampaign) (*zklock.Leadership, error) {
	sess, err := s.liveSession()
	if err != nil {
		return nil, err
	}
	e, err := s.recipes.election(sess, c.Name)
	if err != nil {
		return nil, err
	}
	return e.Campaign(ctx, []byte(c.Value))
}

// hold is the term of office of one of the daemon's own campaigns.
func (s *Service) hold(ctx context.Context, c *ownCampaign, lead *zklock.Leadership) {
	key := watchKey{kind: fence.KindElection, name: c.Name}
	s.mu.Lock()
	c.lead = lead
	s.mu.Unlock()
	s.m.ElectionWon(c.Name)
	s.m.Leader(c.Name, true)
	s.watches.touch(key)
	s.log.Info("elected", "election", c.Name, "term", lead.Term, "value", c.Value)
	select {
	case <-lead.Lost():
		s.log.Warn("leadership lost", "election", c.Name, "term", lead.Term, "err", lead.Err())
	case <-ctx.Done():
		rctx, cancel := context.WithTimeout(context.Background(), s.cfg.SessionTimeout)
		err := lead.Resign(rctx)
		cancel()
		s.log.Info("resigned", "election", c.Name, "term", lead.Term, "err", err)
	}
	s.mu.Lock()
	c.lead = nil
	s.mu.Unlock()
	s.m.Leader(c.Name, false)
	s.watches.touch(key)
}

// resignAll stops the daemon's own campaigns, resigning those that lead.
func (s *Service) resignAll() {
	if s.stopCampaigns != nil {
		s.stopCampaigns()
	}
	s.campaigns.Wait()
}
