package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
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
			table := c.Bool("table") || !c.Bool("json") && !c.Bool("token-only") && isTerminal(c.App.Writer)
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
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTOKEN\tOWNER\tMODE\tEXPIRES")
	for _, l := range ls {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", termtext.Safe(l.Name), l.Token, dash(termtext.Safe(l.Owner)), dash(termtext.Safe(l.Mode)), ago(time.Until(l.ExpiresAt)))
	}
	return tw.Flush()
}

func showStatus(c *cli.Context, cl *client.Client, f api.Family, name string, table bool) error {
	var (
		v              any
		token          uint64
		holding, queue []api.Contender
		head           string
		unread         int
		err            error
		lock           api.LockStatus
		sem            api.SemaphoreStatus
		elect          api.ElectionStatus
	)
	switch f {
	case api.Semaphores:
		sem, err = cl.SemaphoreStatus(c.Context, name)
		v, holding, queue, unread = sem, sem.Holding, sem.Queue, sem.Unread
		head = fmt.Sprintf("semaphore %s: %d of %s held", name, sem.Holders, limitWord(sem.Limit))
	case api.Elections:
		elect, err = cl.Election(c.Context, name)
		v, holding, queue, unread = elect, elect.Holding, elect.Queue, elect.Unread
		head = fmt.Sprintf("election %s: no leader", name)
		if elect.Leader != nil {
			token = elect.Leader.Term
			head = fmt.Sprintf("election %s: led, term %d, value %q", name, elect.Leader.Term, elect.Leader.Value)
		}
	default:
		lock, err = cl.Status(c.Context, name)
		v, token, holding, queue, unread = lock, lock.Token, lock.Holding, lock.Queue, lock.Unread
		head = fmt.Sprintf("lock %s: free", name)
		if lock.Held {
			head = fmt.Sprintf("lock %s: held, token %d", name, lock.Token)
		}
		if lock.BlockedBy != "" {
			head = fmt.Sprintf("lock %s: blocked by %s, a node no session owns: delete it to free the lock", name, lock.BlockedBy)
		}
	}
	if err != nil {
		return clientError(c, err)
	}
	if !table {
		return printOut(c, v, token)
	}
	fmt.Fprintln(c.App.Writer, termtext.Safe(head))
	if len(holding)+len(queue) == 0 {
		fmt.Fprintln(c.App.Writer, "no contenders")
		return nil
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tROLE\tTOKEN\tOWNER\tDAEMON\tCLIENT\tMODE\tWAITING SINCE\tEXPIRES")
	now := time.Now()
	row := func(i int, role string, ct api.Contender) {
		tok := "-"
		if ct.Token != 0 {
			tok = fmt.Sprint(ct.Token)
		}
		owner := ct.Owner
		if ct.Command != "" {
			owner += " (" + ct.Command + ")"
		}
		if ct.Value != "" {
			owner += " value=" + ct.Value
		}
		exp := "-"
		if ct.ExpiresAt != nil {
			exp = ago(ct.ExpiresAt.Sub(now))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s (%s ago)\t%s\n", i, role, tok, dash(termtext.Safe(strings.TrimSpace(owner))), dash(termtext.Safe(ct.Daemon)), termtext.Safe(ct.Client), dash(termtext.Safe(ct.Mode)),
			ct.Since.Local().Format("2006-01-02 15:04:05"), now.Sub(ct.Since).Round(time.Second), exp)
	}
	for i, h := range holding {
		row(i+1, "holder", h)
	}
	for i, w := range queue {
		row(len(holding)+i+1, "waiting", w)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unread > 0 {
		fmt.Fprintf(c.App.Writer, "and %d more contenders, not read\n", unread)
	}
	return nil
}

func limitWord(limit int) string {
	if limit == 0 {
		return "an unrecorded limit"
	}
	return fmt.Sprint(limit)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago says when d from now is: "in 9.8s", or "9.8s ago".
func ago(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	if d < 0 {
		return (-d).String() + " ago"
	}
	return "in " + d.String()
}

func breakCommand() *cli.Command {
	return &cli.Command{
		Name:      "break",
		Usage:     "break NAME's holder: delete its contender so that the next waiter is granted (with a higher token); needs the daemon's admin token",
		ArgsUsage: "NAME",
		Flags: clientFlags(kindFlag(),
			&cli.StringFlag{Name: "reason", Usage: "why (required): it goes into the daemon's audit log and the broken lease's answers", EnvVars: []string{"SEQD_REASON"}},
			&cli.Uint64Flag{Name: "token", Usage: "break only the holder with this token (term), if it still holds", EnvVars: []string{"SEQD_TOKEN"}},
			&cli.StringFlag{Name: "admin-token-file", Usage: "file holding the daemon's admin token (its --admin-token-file)", EnvVars: []string{"SEQD_ADMIN_TOKEN_FILE"}},
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
			path := c.String("admin-token-file")
			if path == "" {
				return usageErrorf("break needs --admin-token-file (or SEQD_ADMIN_TOKEN_FILE) naming the file that holds the daemon's admin token")
			}
			admin, err := security.LoadToken(path)
			if err != nil {
				return usageErrorf("--admin-token-file: %v", err)
			}
			cl, err := newClientToken(c, admin)
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

// onlyHolder is the token of name's only holder, for a break without
// --token: the daemon breaks only a holder named by its token, so that a
// replayed request cannot break the next one.
func onlyHolder(c *cli.Context, cl *client.Client, f api.Family, name string) (uint64, error) {
	var holding []api.Contender
	var err error
	switch f {
	case api.Semaphores:
		var st api.SemaphoreStatus
		st, err = cl.SemaphoreStatus(c.Context, name)
		holding = st.Holding
	case api.Elections:
		var st api.ElectionStatus
		st, err = cl.Election(c.Context, name)
		holding = st.Holding
	default:
		var st api.LockStatus
		st, err = cl.Status(c.Context, name)
		holding = st.Holding
	}
	if err != nil {
		return 0, clientError(c, err)
	}
	switch len(holding) {
	case 0:
		return 0, withCode(ExitConflict, fmt.Errorf("%s has no holder to break", termtext.Safe(name)))
	case 1:
		return holding[0].Token, nil
	}
	return 0, usageErrorf("%s has %d holders: give --token with the token of the one to break (seqd status --table %s)", termtext.Safe(name), len(holding), termtext.Safe(name))
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
