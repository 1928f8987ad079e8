package sequencer

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/metrics"
)

// Breaking a lock: an operator deletes a holder's contender, with a reason
// that goes into the audit log and into the broken lease's answers. The
// next grant's token is higher than the broken holder's, so a resource
// that fences refuses the broken holder's late writes.

// breakHolder deletes the contender of the holder of family f's name that
// req.Token names (required), after the request passed
// the admin check. by is where the request came from, for the audit log.
// The audit line is written and synced before the holder is broken; if it
// cannot be, nothing is broken and the error is a 503.
func (s *Service) breakHolder(ctx context.Context, f api.Family, name string, req api.BreakRequest, by string) (api.BreakResponse, error) {
	if err := validateName(f, name); err != nil {
		return api.BreakResponse{}, err
	}
	reason, err := breakReason(req)
	if err != nil {
		return api.BreakResponse{}, err
	}
	sess, err := s.liveSession()
	if err != nil {
		return api.BreakResponse{}, err
	}
	q, parent, err := s.queueOf(ctx, sess, f, name)
	if err != nil {
		return api.BreakResponse{}, err
	}
	kind := kindsOf(f)[0]
	holding, _ := s.contenders(f, name, q)
	target, err := pickHolder(kind, name, holding, req.Token)
	if err != nil {
		return api.BreakResponse{}, err
	}
	h := holding[target]
	if h.Mode == api.ModeShared {
		kind = fence.KindShared
	}
	// The line goes to the audit log, synced, before anything is broken:
	// a break that cannot be recorded is not made.
	e := AuditEvent{Time: s.clock.Now().UTC(), Event: AuditBreak, Kind: kindWord(kind), Name: name, Token: h.Token, Owner: h.Owner, Daemon: h.Daemon, Reason: reason, By: by, Identity: callerOf(ctx).name()}
	if err := s.cfg.Audit.Record(e, true); err != nil {
		s.audit.failed(e, err)
		return api.BreakResponse{}, unavailable("the break's audit line could not be written and synced, so nothing was broken", err)
	}
	// A lease of this daemon ends as broken (its holder's next call says
	// so); the ending deletes its contender as an expiry would.
	if l := s.leases.find(f, name, h.Token, parent+"/"+h.Node, true); l != nil {
		if s.leases.breakLease(l, reason) {
			s.ended(context.WithoutCancel(ctx), l, broken, metrics.ReasonBroken, false)
		}
	}
	gone, err := sess.BreakNode(ctx, parent, h.Node)
	if err != nil {
		failed := e
		failed.Time, failed.Event, failed.Reason = s.clock.Now().UTC(), AuditBreakFailed, "zookeeper did not delete the holder's node: "+err.Error()
		s.audit.record(failed)
		if ctx.Err() != nil {
			return api.BreakResponse{}, ctx.Err()
		}
		return api.BreakResponse{}, unavailable("zookeeper did not delete the holder's node", err)
	}
	_ = gone // deleted now, or by the lease's end just before: broken either way
	s.log.Warn("broken", noun(kind), name, "token", h.Token, "owner", h.Owner, "daemon", h.Daemon, "reason", reason, "by", by)
	return api.BreakResponse{Broken: true, Token: h.Token, Holder: h, Reason: reason}, nil
}

// pickHolder is the index in holding of the holder with token.
func pickHolder(kind fence.Kind, name string, holding []api.Contender, token uint64) (int, error) {
	for i, h := range holding {
		if h.Token == token {
			return i, nil
		}
	}
	var cur uint64
	if len(holding) == 1 {
		cur = holding[0].Token
	}
	return 0, &ConflictError{Err: api.ErrNotHeld, Kind: kind, Name: name, Token: token, CurrentToken: cur}
}

// breakReason checks a break's request alone, and is its reason, trimmed.
func breakReason(req api.BreakRequest) (string, error) {
	reason := strings.TrimSpace(req.Reason)
	switch {
	case reason == "":
		return "", badRequest("reason is required: say why the holder is broken (it goes into the audit log)")
	case len(reason) > api.MaxReasonBytes:
		return "", badRequest("reason is %d bytes, longer than %d", len(reason), api.MaxReasonBytes)
	case !utf8.ValidString(reason):
		return "", badRequest("reason is not UTF-8 text")
	case req.Token == 0:
		// A break that named no holder would break whoever holds when it
		// is replayed; one that names it breaks nobody else, ever.
		return "", badRequest("token is required: name the token of the holder to break (the status read shows it), so that the request, replayed, cannot break the next holder")
	}
	return reason, nil
}
