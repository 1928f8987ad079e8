package main

import (
	"encoding/json"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/cmd/seqd/internal/lockstatus"
)

func leaderCommand() *cli.Command {
	return &cli.Command{
		Name:      "leader",
		Usage:     "show an election's leader (read from ZooKeeper); with --watch, one JSON line per change until interrupted",
		ArgsUsage: "NAME",
		Flags: clientFlags(
			&cli.BoolFlag{Name: "watch", Usage: "print one JSON line per leader change (blocking reads, no polling)", EnvVars: []string{"SEQD_WATCH"}},
		),
		Action: func(c *cli.Context) error {
			name, err := oneName(c)
			if err != nil {
				return err
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			if !c.Bool("watch") {
				st, err := cl.Election(c.Context, name)
				if err != nil {
					return clientError(c, err)
				}
				return printOut(c, st, termOf(st))
			}
			return watchLeader(c, cl, name)
		},
	}
}

func termOf(st api.ElectionStatus) uint64 {
	if st.Leader == nil {
		return 0
	}
	return st.Leader.Term
}

// watchLeader prints the election's state now and after every change of
// leader, one compact JSON object per line, until the command's context
// ends.
func watchLeader(c *cli.Context, cl *client.Client, name string) error {
	enc := json.NewEncoder(c.App.Writer)
	var encodeErr error
	err := lockstatus.WatchLeader(c.Context, cl, name, func(st api.ElectionStatus) error {
		encodeErr = enc.Encode(st)
		return encodeErr
	})
	if err != nil && err != encodeErr {
		return clientError(c, err)
	}
	return err
}
