package main

import (
	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/cmd/seqd/internal/serving"
	"github.com/seqd/seqd/sequencer/policy"
)

// loadIdentityFiles reads serve's --tokens-file and --policy-file: a line
// that does not parse is exit 64 with the sentence naming it.
func loadIdentityFiles(c *cli.Context) (serving.Identities, error) {
	var f serving.Identities
	var err error
	if p := c.String("tokens-file"); p != "" {
		if f.Tokens, err = policy.WatchTokens(p); err != nil {
			return f, usageErrorf("--tokens-file: %v", err)
		}
	}
	if p := c.String("policy-file"); p != "" {
		if f.Policy, err = policy.WatchPolicy(p); err != nil {
			return f, usageErrorf("--policy-file: %v", err)
		}
	}
	return f, nil
}
