package sequencer

import (
	"context"

	"github.com/seqd/seqd/api"
)

// BreakUntraced is Break without its span and its duration's observation:
// the baseline of the tracing benchmark.
func (s *Service) BreakUntraced(ctx context.Context, f api.Family, name string, req api.BreakRequest, by string) (api.BreakResponse, error) {
	ctx, c := s.enter(ctx)
	if err := s.mayBreak(c, f, name); err != nil {
		return api.BreakResponse{}, err
	}
	return s.breakHolder(ctx, f, name, req, by)
}
