package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/sequencer"
	"github.com/seqd/seqd/zklock"
)

// campaignFlag is serve's --campaign NAME[=VALUE]: the daemon campaigns for
// itself in election NAME for as long as it runs.
func campaignFlag() cli.Flag {
	return &cli.StringSliceFlag{
		Name:    "campaign",
		Usage:   "campaign for this daemon in election `NAME[=VALUE]` while it runs (VALUE default the host name); repeatable, or comma-separated in the env var",
		EnvVars: []string{"SEQD_CAMPAIGN"},
	}
}

// parseCampaigns reads the --campaign values.
func parseCampaigns(vals []string) ([]sequencer.Candidate, error) {
	host, _ := os.Hostname()
	var out []sequencer.Candidate
	seen := map[string]bool{}
	for _, v := range vals {
		name, value, ok := strings.Cut(strings.TrimSpace(v), "=")
		if !ok {
			value = host
		}
		if err := zklock.ValidateName(name); err != nil {
			return nil, usageErrorf("--campaign %q: %s", v, strings.TrimPrefix(err.Error(), "zklock: "))
		}
		if len(value) > api.MaxValueBytes {
			return nil, usageErrorf("--campaign %q: the value is longer than %d bytes", v, api.MaxValueBytes)
		}
		if seen[name] {
			return nil, usageErrorf("--campaign names %q twice", name)
		}
		seen[name] = true
		out = append(out, sequencer.Candidate{Name: name, Value: value})
	}
	return out, nil
}

// describeCampaigns is for the "listening" log line.
func describeCampaigns(cs []sequencer.Candidate) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Name, c.Value))
	}
	return strings.Join(parts, ",")
}
