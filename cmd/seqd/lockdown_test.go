package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/cmd/seqd/internal/lockdown"
	"github.com/seqd/seqd/internal/security"
	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// shellRun runs script with sh, the seqd binary first on PATH, and no
// SEQD_* variable but those of env: what a user's shell does after
// `. client.env` or a pasted export line.
func shellRun(t *testing.T, env []string, script string) (code int, stdout, stderr string) {
	t.Helper()
	bin := lockTestBinary(t)
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = lockEnv(append(env, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))...)
	var out, errb zktest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String(), errb.String()
		} else if err != nil {
			t.Fatalf("sh -c %q: %v", script, err)
		}
		return 0, out.String(), errb.String()
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("sh -c %q still running after a minute; stderr:\n%s", script, errb.String())
	}
	return -1, "", ""
}

// printedCommand is the `seqd CMD …` that seqd init printed, as a shell
// splits it.
func printedCommand(t *testing.T, out, cmd string) []string {
	t.Helper()
	start := strings.Index(out, "  seqd "+cmd+" ")
	if start < 0 {
		t.Fatalf("seqd init printed no seqd %s command:\n%s", cmd, out)
	}
	block, _, _ := strings.Cut(out[start:], "\n\n")
	line := strings.ReplaceAll(block, "\\\n", " ")
	words, err := exec.Command("/bin/sh", "-c", "for w in "+line+"; do printf '%s\\n' \"$w\"; done").Output()
	if err != nil {
		t.Fatalf("splitting %q: %v", line, err)
	}
	return strings.Split(strings.TrimSpace(string(words)), "\n")[1:] // without "seqd"
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestInitThenLockedDown: seqd init, then serve with the flags it printed
// against ZooKeeper (digest identity, creator ACL); with client.env read
// by a shell, acquire, check, release and seqd lock work without another
// flag; without each piece of it, each command is refused with exit 77
// and a sentence naming the flag (or variable) to give.
func TestInitThenLockedDown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	zkc := zktest.StartT(t, testenv.Options{})
	dir := filepath.Join(t.TempDir(), "lockdown")
	code, out, errs := runCLI(ctx, "init", "--dir", dir, "--listen", "127.0.0.1:"+freePort(t), "--zk", zkc.ConnectString())
	if code != 0 {
		t.Fatalf("seqd init = %d\n%s%s", code, out, errs)
	}
	initOut := out
	serveArgs := printedCommand(t, out, "serve")
	if took := slices.Contains(serveArgs, "--admin-token-file"); took != serveTakes("admin-token-file") {
		t.Errorf("the printed serve command has --admin-token-file: %v; serve takes it: %v", took, !took)
	}
	startServe(t, serveArgs[1:]...)
	env := ". " + filepath.Join(dir, lockdown.ClientEnvFile) + " && "

	// Locked down, with client.env: no further flag.
	code, out, errs = shellRun(t, nil, env+"seqd acquire --ttl 30s --lease-id 00112233445566778899aabbccddeeff locked/a")
	var l api.Lease
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || !strings.Contains(l.Sequencer, "."+lockdown.KeyID+".") {
		t.Fatalf("acquire with client.env = %d %q %s; want a lease with a signed sequencer", code, out, errs)
	}
	if code, out, errs := shellRun(t, nil, env+"seqd check "+l.Sequencer); code != 0 {
		t.Fatalf("check with client.env = %d %s %s", code, out, errs)
	}
	release := "seqd release --lease-id " + l.LeaseID + " --token " + strconv.FormatUint(l.Token, 10) + " locked/a"
	if code, _, errs := shellRun(t, nil, env+release); code != 0 {
		t.Fatalf("release with client.env = %d %s", code, errs)
	}
	code, out, errs = shellRun(t, nil, env+`seqd lock locked/b -- sh -c 'echo "ran under $SEQD_SEQUENCER"'`)
	if code != 0 || !regexp.MustCompile(`^ran under locked/b@[0-9]+\.`+lockdown.KeyID+`\.\S+\n$`).MatchString(out) {
		t.Fatalf("seqd lock with client.env = %d %q %s; want a signed sequencer", code, out, errs)
	}

	// The store seqd init printed admits what seqd lock hands its command,
	// with client.env and nothing else; without the signing key (the
	// negative control) the sequencer is unsigned, and refused.
	var storeArgs []string
	for i := 0; i < len(printedCommand(t, initOut, "store")); i++ {
		a := printedCommand(t, initOut, "store")[i]
		switch a {
		case "--listen":
			i++ // startStore picks a free port
			continue
		case "--dir":
			storeArgs = append(storeArgs, a, filepath.Join(t.TempDir(), "seqd-store"))
			i++
			continue
		}
		if i > 0 {
			storeArgs = append(storeArgs, a)
		}
	}
	st := startStore(t, lockTestBinary(t), storeArgs...)
	put := `seqd lock locked/s -- sh -c 'curl -sS -w " %{http_code}" --cacert "$SEQD_CACERT" --cert "$SEQD_CERT" --key "$SEQD_KEY" \
	  -H "Authorization: Bearer $(cat "$SEQD_API_TOKEN_FILE")" -H "Fencing-Sequencer: $SEQD_SEQUENCER" \
	  -X PUT --data-binary nightly https://` + st.addr + `/v1/kv/reports/nightly'`
	code, out, errs = shellRun(t, nil, env+put)
	if code != 0 || !strings.HasSuffix(out, " 200") {
		t.Errorf("seqd lock writing to the printed store, with client.env = %d %q %s; want 200", code, out, errs)
	}
	code, out, errs = shellRun(t, nil, env+"unset SEQD_SIGNING_KEY_FILE && "+put)
	if code != 0 || !strings.Contains(out, `"unsigned"`) || !strings.HasSuffix(out, " 403") {
		t.Errorf("seqd lock without the signing key, writing to the printed store = %d %q %s; want 403 unsigned", code, out, errs)
	}

	// A client certificate of another CA, and a token that is not the
	// daemon's.
	other, err := security.NewCA("another CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	oc, ok, _ := other.IssueClient("stranger", time.Hour)
	stranger := t.TempDir()
	os.WriteFile(filepath.Join(stranger, "cert.pem"), oc, 0o644)
	os.WriteFile(filepath.Join(stranger, "key.pem"), ok, 0o600)
	os.WriteFile(filepath.Join(stranger, "token"), []byte(strings.Repeat("ab", 32)+"\n"), 0o600)

	// Each refusal, for each client command: what is taken away from the
	// environment, and what the sentence must name.
	commands := map[string]string{
		"acquire": "seqd acquire --wait 0 locked/c",
		"check":   "seqd check " + l.Sequencer,
		"release": release,
	}
	refusals := []struct {
		name   string
		script string // run before the command
		want   []string
	}{
		{"only the address", "unset SEQD_API_TOKEN_FILE SEQD_CACERT SEQD_CERT SEQD_KEY", []string{"does not trust", "--cacert (or SEQD_CACERT"}},
		{"no CA", "unset SEQD_CACERT", []string{"does not trust", "--cacert (or SEQD_CACERT"}},
		{"no client certificate", "unset SEQD_CERT SEQD_KEY", []string{"requires a client certificate", "--cert and --key (or SEQD_CERT and SEQD_KEY)"}},
		{"a client certificate of another CA", "SEQD_CERT=" + stranger + "/cert.pem SEQD_KEY=" + stranger + "/key.pem", []string{"refused the client certificate", "--cert and --key"}},
		{"no token", "unset SEQD_API_TOKEN_FILE", []string{"requires a bearer token (401)", "--api-token-file (or SEQD_API_TOKEN_FILE)"}},
		{"another token", "SEQD_API_TOKEN_FILE=" + stranger + "/token", []string{"refused the bearer token", "--api-token-file (or SEQD_API_TOKEN_FILE)"}},
	}
	for _, r := range refusals {
		for name, cmd := range commands {
			code, out, errs := shellRun(t, nil, env+r.script+" && "+cmd)
			if code != ExitAuth {
				t.Errorf("%s, %s: exit %d, want %d\n%s%s", r.name, name, code, ExitAuth, out, errs)
				continue
			}
			for _, w := range r.want {
				if !strings.Contains(errs, w) {
					t.Errorf("%s, %s: %q does not say %q", r.name, name, errs, w)
				}
			}
		}
	}
	for _, r := range []struct{ name, script string }{
		{"no ZooKeeper identity", "unset SEQD_ZK_AUTH_FILE"},
		{"nothing but ZooKeeper's address", "unset SEQD_ZK_AUTH_FILE SEQD_ADDR SEQD_API_TOKEN_FILE SEQD_CACERT SEQD_CERT SEQD_KEY"},
	} {
		code, out, errs := shellRun(t, nil, env+r.script+" && seqd lock locked/b -- true")
		if code != ExitAuth || !strings.Contains(errs, "--zk-auth-file (or SEQD_ZK_AUTH_FILE)") {
			t.Errorf("seqd lock, %s: exit %d %q, want %d naming --zk-auth-file\n%s", r.name, code, errs, ExitAuth, out)
		}
	}
}

var exportLine = regexp.MustCompile(`(?m)^  (export SEQD_.*)$`)

// TestDevSecureExportLine: the export line seqd dev --secure prints, pasted
// into a shell, makes seqd acquire succeed over https (and seqd lock reach
// ZooKeeper, over TLS with --zk-tls); without it (the address alone) the
// same acquire is refused; the temporary directory goes when dev stops.
func TestDevSecureExportLine(t *testing.T) {
	for _, extra := range [][]string{nil, {"--zk-tls"}} {
		t.Run(strings.Join(append([]string{"secure"}, extra...), " "), func(t *testing.T) {
			devSecureExportLine(t, extra)
		})
	}
}

func devSecureExportLine(t *testing.T, extra []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb zktest.Buffer
	done := make(chan int, 1)
	go func() {
		args := append([]string{"seqd", "dev", "--secure", "--zk-port", "0", "--listen", "127.0.0.1:0"}, extra...)
		err := run(ctx, args, strings.NewReader(""), io.Discard, &errb)
		done <- exitCode(err, &errb)
	}()
	var line string
	zktest.Eventually(t, 90*time.Second, "seqd dev --secure to print its export line", func() bool {
		select {
		case code := <-done:
			t.Fatalf("seqd dev --secure exited %d:\n%s", code, errb.String())
		default:
		}
		if m := exportLine.FindStringSubmatch(errb.String()); m != nil {
			line = m[1]
		}
		return line != ""
	})
	addr := regexp.MustCompile(`SEQD_ADDR=(\S+)`).FindStringSubmatch(line)
	if addr == nil || !strings.HasPrefix(addr[1], "https://") {
		t.Fatalf("export line %q: want SEQD_ADDR=https://…", line)
	}
	if zkTLS := strings.Contains(line, "SEQD_ZK_TLS_CERT_FILE="); zkTLS != (len(extra) > 0) {
		t.Errorf("export line %q: ZooKeeper TLS settings %v, want %v", line, zkTLS, len(extra) > 0)
	}
	code, out, errs := shellRun(t, nil, line+"\nseqd acquire --ttl 10s --token-only demo && seqd lock demo-lock -- sh -c 'echo \"$SEQD_SEQUENCER\"'")
	if !regexp.MustCompile(`^[0-9]+\ndemo-lock@[0-9]+\.`+lockdown.KeyID+`\.\S+\n$`).MatchString(out) || code != 0 {
		t.Fatalf("acquire and lock after pasting the export line = %d %q %s; want a token, then a signed sequencer", code, out, errs)
	}
	if code, _, errs := shellRun(t, []string{"SEQD_ADDR=" + addr[1]}, "seqd acquire --ttl 10s demo2"); code != ExitAuth {
		t.Errorf("acquire with the address alone = %d %s, want %d", code, errs, ExitAuth)
	}
	tmp := regexp.MustCompile(`files in (\S+), removed when dev stops`).FindStringSubmatch(errb.String())
	if tmp == nil {
		t.Fatalf("dev did not say where its files are:\n%s", errb.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("seqd dev --secure stopped with %d:\n%s", code, errb.String())
	}
	if _, err := os.Stat(tmp[1]); !os.IsNotExist(err) {
		t.Errorf("%s still there after dev stopped (%v)", tmp[1], err)
	}
}

// TestCertificateRotation: a new certificate and key written over the
// files a server was started with are served on the next connection,
// without a restart, and the server logs the reload. (seqd store and
// seqd serve take their TLS files through the same code; the store needs
// no ZooKeeper.)
func TestCertificateRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, second := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, d := range []string{first, second} {
		if code, out, errs := runCLI(ctx, "init", "--dir", d); code != 0 {
			t.Fatalf("init %s = %d %s%s", d, code, out, errs)
		}
	}
	stderr := &addrWriter{addr: make(chan string, 1)}
	storeCtx, stop := context.WithCancel(context.Background())
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		run(storeCtx, []string{"seqd", "store", "--dir", t.TempDir(), "--listen", "127.0.0.1:0",
			"--tls-cert-file", filepath.Join(first, lockdown.ServerCertFile), "--tls-key-file", filepath.Join(first, lockdown.ServerKeyFile)},
			strings.NewReader(""), io.Discard, stderr)
	}()
	defer func() { stop(); <-exited }()
	var addr string
	select {
	case addr = <-stderr.addr:
	case <-exited:
		t.Fatalf("seqd store exited:\n%s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("seqd store did not listen:\n%s", stderr)
	}
	roots := x509.NewCertPool()
	for _, d := range []string{first, second} {
		b, _ := os.ReadFile(filepath.Join(d, lockdown.CAFile))
		roots.AppendCertsFromPEM(b)
	}
	served := func() string {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
		if err != nil {
			t.Fatalf("connecting: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Issuer.CommonName + " " + conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	before := served()
	for _, f := range []string{lockdown.ServerKeyFile, lockdown.ServerCertFile} { // written over the old ones, in place
		b, err := os.ReadFile(filepath.Join(second, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(first, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	after := served()
	if after == before {
		t.Fatalf("after writing a new certificate the store still serves %s", before)
	}
	if again := served(); again != after {
		t.Errorf("the next connection got %s, want the new certificate %s again", again, after)
	}
	if !strings.Contains(stderr.String(), "TLS files reloaded") {
		t.Errorf("the store did not log the reload:\n%s", stderr)
	}
}

// TestInitRefusals: seqd init writes nothing over an existing file, nor
// into a directory others can write, nor with bad hosts or days; seqd dev
// --secure refuses a directory with only part of init's files.
func TestInitRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "d")
	os.Mkdir(dir, 0o700)
	os.WriteFile(filepath.Join(dir, lockdown.APITokenFile), []byte("mine\n"), 0o600)
	code, _, errs := runCLI(ctx, "init", "--dir", dir)
	if code != ExitUsage || !strings.Contains(errs, "already holds api-token") || !strings.Contains(errs, "nothing was written") {
		t.Errorf("init over an existing file = %d %q, want %d naming it", code, errs, ExitUsage)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after the refusal the directory holds %d files, want only the one that was there", len(entries))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, lockdown.APITokenFile)); string(b) != "mine\n" {
		t.Errorf("the existing file was overwritten: %q", b)
	}
	code, _, errs = runCLI(ctx, "dev", "--secure", "--dir", dir)
	if code != ExitUsage || !strings.Contains(errs, "some of seqd init's files") {
		t.Errorf("dev --secure on a partial directory = %d %q, want %d", code, errs, ExitUsage)
	}
	if code, _, errs := runCLI(ctx, "dev", "--zk-tls"); code != ExitUsage || !strings.Contains(errs, "go with --secure") {
		t.Errorf("dev --zk-tls without --secure = %d %q, want %d", code, errs, ExitUsage)
	}

	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if code, _, errs := runCLI(ctx, "init", "--dir", open); code != ExitUsage || !strings.Contains(errs, "can be written by others") {
		t.Errorf("init into a directory others can write = %d %q, want %d", code, errs, ExitUsage)
	}
	if entries, _ := os.ReadDir(open); len(entries) != 0 {
		t.Errorf("init wrote %d files into a directory others can write", len(entries))
	}
	for _, args := range [][]string{
		{"--host", "bad host"},
		{"--days", "0"},
		{"--listen", "7070"},
		{},
	} {
		d := filepath.Join(t.TempDir(), "x")
		full := append([]string{"init", "--dir", d}, args...)
		if len(args) == 0 {
			full = []string{"init"} // no --dir
		}
		if code, _, errs := runCLI(ctx, full...); code != ExitUsage {
			t.Errorf("seqd %v = %d %q, want %d", full, code, errs, ExitUsage)
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("seqd %v made %s", full, d)
		}
	}
}

// TestPlainDevExportsFollowTheFlags: seqd dev without --secure prints
// https and the token file when it was given them, and says, in a comment
// that keeps the pasted lines valid, what it cannot name.
func TestPlainDevExportsFollowTheFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []string
		wantNot []string
	}{
		{nil, []string{"SEQD_ZK=zk:1 SEQD_ADDR=http://a:1"}, []string{"https", "#", "TOKEN"}},
		{[]string{"--tls-cert-file", "c.pem", "--tls-key-file", "k.pem", "--api-token-file", "/t/tok"},
			[]string{"SEQD_ADDR=https://a:1", "SEQD_API_TOKEN_FILE=/t/tok", "\n  # and SEQD_CACERT"}, []string{"SEQD_CERT"}},
		{[]string{"--tls-cert-file", "c.pem", "--tls-key-file", "k.pem", "--tls-client-ca-file", "ca.pem"},
			[]string{"SEQD_ADDR=https://a:1", "SEQD_CERT and SEQD_KEY"}, nil},
	} {
		set := flag.NewFlagSet("dev", flag.ContinueOnError)
		for _, f := range devCommand().Flags {
			f.Apply(set)
		}
		if err := set.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		url, line := plainDev(cli.NewContext(newApp(nil, io.Discard, io.Discard), set, nil), "zk:1").Exports("a:1")
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%v: %q (url %s) does not say %q", tc.args, line, url, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(line, w) {
				t.Errorf("%v: %q says %q", tc.args, line, w)
			}
		}
		if out, err := exec.Command("/bin/sh", "-n", "-c", "export "+line).CombinedOutput(); err != nil {
			t.Errorf("%v: the printed lines are not valid shell: %v %s", tc.args, err, out)
		}
	}
}
