package main

import (
	"context"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/metrics"
	"github.com/seqd/seqd/sequencer"
)

// identityFiles are serve's --tokens-file and --policy-file.
type identityFiles struct {
	tokens *sequencer.Watched[sequencer.Tokens]
	policy *sequencer.Watched[sequencer.Policy]
}

// loadIdentityFiles reads --tokens-file and --policy-file: a line that
// does not parse is exit 64 with the sentence naming it.
func loadIdentityFiles(c *cli.Context) (identityFiles, error) {
	var f identityFiles
	var err error
	if p := c.String("tokens-file"); p != "" {
		if f.tokens, err = sequencer.WatchTokens(p); err != nil {
			return f, usageErrorf("--tokens-file: %v", err)
		}
	}
	if p := c.String("policy-file"); p != "" {
		if f.policy, err = sequencer.WatchPolicy(p); err != nil {
			return f, usageErrorf("--policy-file: %v", err)
		}
	}
	return f, nil
}

// poll reloads the files when they change, until ctx ends or stop is
// called (which waits for it).
func (f identityFiles) poll(ctx context.Context, log *slog.Logger, m *metrics.Metrics) (stop func()) {
	var files []sequencer.Reloadable
	if f.tokens != nil {
		files = append(files, f.tokens)
	}
	if f.policy != nil {
		files = append(files, f.policy)
	}
	return serving.PollReloads(ctx, log, m, files...)
}
