package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/cmd/seqd/internal/lockstatus"
	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/sequencer"
)

// Operators' commands: status (who holds, who waits) and break.

// kindFlag names the family a status or a break is about.
func kindFlag() cli.Flag {
	return &cli.StringFlag{Name: "kind", Value: "lock", Usage: "what NAME is: lock, semaphore or election", EnvVars: []string{"SEQD_KIND"}}
}

// family reads --kind.
func family(c *cli.Context) (api.Family, error) {
	switch k := c.String("kind"); k {
	case "lock", "locks":
		return api.Locks, nil
	case "semaphore", "semaphores":
		return api.Semaphores, nil
	case "election", "elections":
		return api.Elections, nil
	default:
		return "", usageErrorf("--kind %q: want lock, semaphore or election", k)
	}
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show who holds NAME and who waits, in order (read from ZooKeeper), or with no NAME the leases held through the daemon; a table on a terminal, JSON otherwise",
		ArgsUsage: "[NAME]",
		Flags: clientFlags(kindFlag(),
			&cli.BoolFlag{Name: "json", Usage: "print JSON, even on a terminal", EnvVars: []string{"SEQD_JSON"}},
			&cli.BoolFlag{Name: "table", Usage: "print a table, even when the output is no terminal", EnvVars: []string{"SEQD_TABLE"}},
		),
		Action: func(c *cli.Context) error {
			f, err := family(c)
			if err != nil {
				return err
			}
			if c.Bool("json") && c.Bool("table") {
				return usageErrorf("status: give --json or --table, not both")
			}
			cl, err := newClient(c)
			if err != nil {
				return err
			}
			table := c.Bool("table") || !c.Bool("json") && !c.Bool("token-only") && termtext.IsTerminal(c.App.Writer)
			switch c.NArg() {
			case 0:
				return listLeases(c, cl, f, table)
			case 1:
				return showStatus(c, cl, f, c.Args().First(), table)
			}
			return usageErrorf("status takes at most one NAME")
		},
	}
}

func listLeases(c *cli.Context, cl *client.Client, f api.Family, table bool) error {
	ls, err := cl.Leases(c.Context, f)
	if err != nil {
		return clientError(c, err)
	}
	if c.Bool("token-only") {
		for _, l := range ls {
			fmt.Fprintln(c.App.Writer, l.Token)
		}
		return nil
	}
	if !table {
		return printOut(c, api.LeaseList{Family: string(f), Leases: ls}, 0)
	}
	return lockstatus.WriteLeases(c.App.Writer, ls, time.Now())
}

func showStatus(c *cli.Context, cl *client.Client, f api.Family, name string, table bool) error {
	st, err := lockstatus.Read(c.Context, cl, f, name)
	if err != nil {
		return clientError(c, err)
	}
	if !table {
		return printOut(c, st.Answer, st.Token)
	}
	return st.WriteTable(c.App.Writer, time.Now())
}

func breakCommand() *cli.Command {
	return &cli.Command{
		Name:      "break",
		Usage:     "break NAME's holder: delete its contender so that the next waiter is granted (with a higher token); needs the daemon's admin token, or an identity its policy lets break",
		ArgsUsage: "NAME",
		Flags: clientFlags(kindFlag(),
			&cli.StringFlag{Name: "reason", Usage: "why (required): it goes into the daemon's audit log and the broken lease's answers", EnvVars: []string{"SEQD_REASON"}},
			&cli.Uint64Flag{Name: "token", Usage: "break only the holder with this token (term), if it still holds", EnvVars: []string{"SEQD_TOKEN"}},
			&cli.StringFlag{Name: "admin-token-file", Usage: "file holding the daemon's admin token (its --admin-token-file); without it, the token of --api-token-file and the certificate of --cert name the caller, for a daemon whose policy lets them break", EnvVars: []string{"SEQD_ADMIN_TOKEN_FILE"}},
		),
		Action: func(c *cli.Context) error {
			name, err := oneName(c)
			if err != nil {
				return err
			}
			f, err := family(c)
			if err != nil {
				return err
			}
			reason := strings.TrimSpace(c.String("reason"))
			if reason == "" {
				return usageErrorf("break needs --reason: say why the holder is broken (it goes into the audit log)")
			}
			cl, err := breakClient(c)
			if err != nil {
				return err
			}
			token := c.Uint64("token")
			if token == 0 {
				if token, err = onlyHolder(c, cl, f, name); err != nil {
					return err
				}
			}
			res, err := cl.Break(c.Context, f, name, reason, token)
			if err != nil {
				return clientError(c, err)
			}
			return printOut(c, res, res.Token)
		},
	}
}

// breakClient sends the admin token of --admin-token-file, else the
// caller's own token and certificate: the daemon decides who may break.
func breakClient(c *cli.Context) (*client.Client, error) {
	path := c.String("admin-token-file")
	if path == "" {
		return newClient(c)
	}
	admin, err := security.LoadToken(path)
	if err != nil {
		return nil, usageErrorf("--admin-token-file: %v", err)
	}
	return newClientToken(c, admin)
}

// onlyHolder is the token of name's only holder, for a break without
// --token.
func onlyHolder(c *cli.Context, cl *client.Client, f api.Family, name string) (uint64, error) {
	token, err := lockstatus.OnlyHolder(c.Context, cl, f, name)
	var many *lockstatus.HoldersError
	switch {
	case errors.Is(err, lockstatus.ErrNoHolder):
		return 0, withCode(ExitConflict, err)
	case errors.As(err, &many):
		return 0, usageErrorf("%s has %d holders: give --token with the token of the one to break (seqd status --table %s)", termtext.Safe(name), many.N, termtext.Safe(name))
	case err != nil:
		return 0, clientError(c, err)
	}
	return token, nil
}

// adminToken reads serve's --admin-token-file, if given: checked like the
// API token's file, and refused if it is the API token.
func adminToken(c *cli.Context, api string) (string, error) {
	path := c.String("admin-token-file")
	if path == "" {
		return "", nil
	}
	tok, err := security.LoadToken(path)
	if err != nil {
		return "", usageErrorf("--admin-token-file: %v", err)
	}
	if tok == api {
		return "", usageErrorf("--admin-token-file holds the same token as --api-token-file: the admin token must be another, or every API client could break holders")
	}
	return tok, nil
}

// openAuditLog opens serve's --audit-log: a file appended to (created mode
// 600), or standard output for "-".
func openAuditLog(c *cli.Context) (*sequencer.AuditLog, func(), error) {
	switch path := c.String("audit-log"); path {
	case "":
		return nil, func() {}, nil
	case "-":
		return sequencer.NewAuditLog(c.App.Writer, nil), func() {}, nil
	default:
		a, err := sequencer.OpenAuditFile(path)
		if err != nil {
			return nil, nil, usageErrorf("--audit-log: %v", err)
		}
		return a, func() { a.Close() }, nil
	}
}
