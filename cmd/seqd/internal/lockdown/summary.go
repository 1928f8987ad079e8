package lockdown

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seqd/seqd/cmd/seqd/internal/termtext"
)

// WriteSummary tells people what seqd init wrote into l, valid days, and
// the serve and store command lines that use it; admin says whether
// serve takes the admin token.
func (l Dir) WriteSummary(w io.Writer, listen string, admin bool, hosts []string, days int) {
	mode := "?"
	if st, err := os.Stat(l.Path); err == nil {
		mode = fmt.Sprintf("mode %#o", st.Mode().Perm())
	}
	fmt.Fprintf(w, "Wrote %s (%s):\n", l.Path, mode)
	for _, row := range [][2]string{
		{CAFile, "the CA: clients trust it (public)"},
		{CAKeyFile, "the CA's key: it signs new certificates (secret; keep it offline once done)"},
		{ServerCertFile + ", " + ServerKeyFile, fmt.Sprintf("the daemon's and the store's certificate for %s, valid %d days", strings.Join(hosts, ", "), days)},
		{ClientCertFile + ", " + ClientKeyFile, "a client certificate, for mutual TLS"},
		{APITokenFile, "the API's bearer token (secret)"},
		{AdminTokenFile, "the admin token, for breaking locks (secret)"},
		{SigningKeyFile + ", " + VerifyKeysFile, "the key that signs sequencers (secret), and its public key for resources"},
		{ZKAuthFile, "the ZooKeeper digest identity, user:password (secret)"},
		{ClientEnvFile, "the settings every client reads"},
	} {
		fmt.Fprintf(w, "  %-28s %s\n", row[0], row[1])
	}
	for i, id := range l.Identities {
		cf, kf := IdentityCertFiles(i)
		fmt.Fprintf(w, "  %-28s %s\n", cf+", "+kf, "a client certificate naming the identity "+termtext.Safe(id)+" (SEQD_CERT, SEQD_KEY)")
	}
	fmt.Fprintf(w, "\nRun the daemon with:\n\n")
	writeCommand(w, l.ServeArgs(listen, admin))
	fmt.Fprintf(w, "\nand the fenced store (if you use it) with:\n\n")
	writeCommand(w, l.StoreArgs())
	fmt.Fprintf(w, "\nThen in every shell that runs a client (seqd acquire, seqd lock, your programs):\n\n  . %s\n", ShellWord(l.File(ClientEnvFile)))
}

// writeCommand writes `seqd ARGS`, a flag and its value per line, to be
// pasted into a shell.
func writeCommand(w io.Writer, args []string) {
	fmt.Fprintf(w, "  seqd %s", args[0])
	for i := 1; i < len(args); i++ {
		fmt.Fprintf(w, " \\\n    %s", ShellWord(args[i]))
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			i++
			fmt.Fprintf(w, " %s", ShellWord(args[i]))
		}
	}
	fmt.Fprintln(w)
}
