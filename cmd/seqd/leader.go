package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// leaderWatchWait is how long each blocking read of `seqd leader --watch`
// waits before it asks again.
const leaderWatchWait = 5 * time.Minute

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
// leader (a new term, a new value, or no leader), one compact JSON object
// per line, until the command's context ends.
func watchLeader(c *cli.Context, cl *client.Client, name string) error {
	enc := json.NewEncoder(c.App.Writer)
	var (
		index   uint64
		printed *api.LeaderView
		first   = true
	)
	for {
		var (
			st  api.ElectionStatus
			err error
		)
		if first {
			st, err = cl.Election(c.Context, name)
		} else {
			st, err = cl.WaitElection(c.Context, name, index, leaderWatchWait)
		}
		if c.Context.Err() != nil || errors.Is(err, context.Canceled) {
			return nil // interrupted: a clean end of watching
		}
		if err != nil {
			return clientError(c, err)
		}
		index = st.Index
		if first || !sameLeader(printed, st.Leader) {
			if err := enc.Encode(st); err != nil {
				return err
			}
			printed, first = st.Leader, false
		}
	}
}

func sameLeader(a, b *api.LeaderView) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Term == b.Term && a.Value == b.Value
}
