package lockdown

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/cmd/seqd/internal/exit"
	"github.com/seqd/seqd/sequencer/policy"
)

// Write writes every file Files lists, the secret ones readable by the
// owner only, and a second Write into the same directory is a usage error
// that leaves the first one's files as they were.
func TestWriteWritesEveryFileOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lockdown")
	l := Dir{Path: dir, Addr: "https://127.0.0.1:7070", ZK: "127.0.0.1:2181", Identities: []string{"team-a"}}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if err := Write(l, hosts, time.Hour); err != nil {
		t.Fatal(err)
	}
	public := map[string]bool{CAFile: true, ServerCertFile: true, ClientCertFile: true, VerifyKeysFile: true, ClientEnvFile: true}
	cert, key := IdentityCertFiles(0)
	for _, name := range append(Files(), cert, key) {
		fi, err := os.Stat(l.File(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := os.FileMode(0o600)
		if public[name] || name == cert {
			want = 0o644
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
	token, _ := os.ReadFile(l.File(APITokenFile))
	err := Write(l, hosts, time.Hour)
	var e *exit.Error
	if !errors.As(err, &e) || e.Code != exit.Usage {
		t.Fatalf("second Write: %v, want a usage error", err)
	}
	if again, _ := os.ReadFile(l.File(APITokenFile)); string(again) != string(token) {
		t.Errorf("the second Write changed %s", APITokenFile)
	}
	env, _ := os.ReadFile(l.File(ClientEnvFile))
	for _, want := range []string{"export SEQD_ADDR=https://127.0.0.1:7070\n", "export SEQD_ZK_AUTH_FILE=" + ShellWord(l.File(ZKAuthFile)) + "\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("client.env lacks %q:\n%s", want, env)
		}
	}
}

// ShellWord leaves plain words alone and quotes the rest so that a POSIX
// shell reads them back as they were, a single quote included.
func TestShellWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/tmp/seqd/ca.pem", "/tmp/seqd/ca.pem"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := ShellWord(tc.in); got != tc.want {
			t.Errorf("ShellWord(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The admin token's flag is in the serve command line only for a serve
// that has it.
func TestServeArgsAdminToken(t *testing.T) {
	l := Dir{Path: "/d", ZK: "zk:2181", Names: []string{"seqd.example"}}
	with := strings.Join(l.ServeArgs("127.0.0.1:7070", true), " ")
	without := strings.Join(l.ServeArgs("127.0.0.1:7070", false), " ")
	if !strings.Contains(with, "--admin-token-file /d/admin-token") || strings.Contains(without, "--admin-token-file") {
		t.Errorf("ServeArgs(admin) = %q, ServeArgs(no admin) = %q", with, without)
	}
	if !strings.HasSuffix(with, "--host seqd.example") {
		t.Errorf("ServeArgs = %q, want --host seqd.example at the end", with)
	}
}

// OpenDev takes an empty directory (to write) or a complete one (to use),
// refuses one with some of the files but not all, naming the missing
// ones, and makes a temporary directory that Cleanup removes.
func TestOpenDev(t *testing.T) {
	empty := t.TempDir()
	if d, err := OpenDev(empty, false); err != nil || !d.write || d.Temp {
		t.Fatalf("OpenDev(empty) = %+v, %v; want a directory to write", d, err)
	}
	full := filepath.Join(t.TempDir(), "full")
	if err := Write(Dir{Path: full}, []string{"localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenDev(full, false); err != nil || d.write {
		t.Fatalf("OpenDev(full) = %+v, %v; want a directory to use as it is", d, err)
	}
	if err := os.Remove(filepath.Join(full, ZKAuthFile)); err != nil {
		t.Fatal(err)
	}
	var inc *IncompleteError
	if _, err := OpenDev(full, false); !errors.As(err, &inc) || len(inc.Missing) != 1 || inc.Missing[0] != ZKAuthFile {
		t.Fatalf("OpenDev(without %s) = %v, want an IncompleteError naming it", ZKAuthFile, err)
	}
	d, err := OpenDev("", true)
	if err != nil || !d.Temp || !d.ZKTLS || d.ZKOptions(0).TLS == nil {
		t.Fatalf("OpenDev(\"\") = %+v, %v; want a temporary directory with ZooKeeper TLS", d, err)
	}
	d.Cleanup()
	if _, err := os.Stat(d.Dir.Path); !os.IsNotExist(err) {
		t.Errorf("Cleanup left %s: %v", d.Dir.Path, err)
	}
	if (*Dev)(nil).ZKOptions(7).ClientPort != 7 {
		t.Error("a nil Dev's ZooKeeper options lost the port")
	}
}

// The summary lists every file, the identities escaped, and the serve
// command a flag per line, with the admin token's only when serve has it.
func TestWriteSummary(t *testing.T) {
	l := Dir{Path: t.TempDir(), ZK: "zk:2181", Identities: []string{"team\x1b[2Ja"}}
	for _, admin := range []bool{true, false} {
		var b strings.Builder
		l.WriteSummary(&b, "127.0.0.1:7070", admin, []string{"localhost"}, 30)
		out := b.String()
		for _, want := range []string{CAKeyFile, ZKAuthFile, "valid 30 days", `team\x1b[2Ja`, "  seqd serve \\\n    --zk zk:2181 \\\n", "  seqd store \\\n", ". " + l.File(ClientEnvFile)} {
			if !strings.Contains(out, want) {
				t.Errorf("admin %v: the summary lacks %q:\n%s", admin, want, out)
			}
		}
		if got := strings.Contains(out, "--admin-token-file"); got != admin {
			t.Errorf("admin %v: --admin-token-file in the serve command: %v", admin, got)
		}
		if strings.Contains(out, "\x1b") {
			t.Errorf("the summary holds a raw escape")
		}
	}
}

// The ready text of a locked-down dev run exports what every client and
// seqd lock need, and says where the files are.
func TestWriteReady(t *testing.T) {
	d := &Dev{Dir: Dir{Path: "/tmp/d", ZK: "127.0.0.1:2181"}, Temp: true, ZKTLS: true, ZKTLSVars: []string{"SEQD_ZK_TLS_CA_FILE=/ca"}}
	var b strings.Builder
	d.WriteReady(&b, "127.0.0.1:7070")
	out := b.String()
	for _, want := range []string{"seqd API on https://127.0.0.1:7070", "files in /tmp/d, removed when dev stops", "reached over mutual TLS",
		"export SEQD_ZK=127.0.0.1:2181 SEQD_ZK_AUTH_FILE=/tmp/d/zk-auth SEQD_SIGNING_KEY_FILE=/tmp/d/signing.key SEQD_ZK_TLS_CA_FILE=/ca SEQD_ADDR=https://127.0.0.1:7070 "} {
		if !strings.Contains(out, want) {
			t.Errorf("the ready text lacks %q:\n%s", want, out)
		}
	}
}

// The export line of a dev run without --secure says https only with TLS,
// names the files it was given by absolute path, and says in a comment
// (which keeps the pasted lines valid shell) what it cannot name.
func TestPlainExports(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p       Plain
		want    []string
		wantNot []string
	}{
		{Plain{ZK: "zk:1"}, []string{"SEQD_ZK=zk:1 SEQD_ADDR=http://a:1"}, []string{"https", "#", "FILE"}},
		{Plain{ZK: "zk:1,zk:2", TLS: true, ZKAuthFile: "auth", APITokenFile: "/t/my tok"},
			[]string{"SEQD_ADDR=https://a:1", "SEQD_ZK_AUTH_FILE=" + filepath.Join(wd, "auth"), "SEQD_API_TOKEN_FILE='/t/my tok'", "\n  # and SEQD_CACERT"},
			[]string{"SEQD_CERT"}},
		{Plain{ZK: "zk:1", TLS: true, ClientCA: true}, []string{"SEQD_ADDR=https://a:1", "SEQD_CERT and SEQD_KEY"}, nil},
	} {
		url, line := tc.p.Exports("a:1")
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("%+v: %q (url %s) does not say %q", tc.p, line, url, w)
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(line, w) {
				t.Errorf("%+v: %q says %q", tc.p, line, w)
			}
		}
		if want := map[bool]string{false: "http://a:1", true: "https://a:1"}[tc.p.TLS]; url != want {
			t.Errorf("%+v: url %q, want %q", tc.p, url, want)
		}
		if out, err := exec.Command("/bin/sh", "-n", "-c", "export "+line).CombinedOutput(); err != nil {
			t.Errorf("%+v: the printed lines are not valid shell: %v %s", tc.p, err, out)
		}
		var b strings.Builder
		tc.p.WriteReady(&b, "a:1")
		if !strings.Contains(b.String(), "seqd API on "+url+".") || !strings.Contains(b.String(), "\n  export "+line+"\n") {
			t.Errorf("%+v: the ready text does not carry the URL and the export line:\n%s", tc.p, b.String())
		}
	}
}

// The commands a dev run suggests run one after another without waiting:
// no seqd lock names a lock that a seqd acquire before it holds (for its
// TTL). The control: the check finds such a pair.
func TestReadyTriesDoNotWaitOnEachOther(t *testing.T) {
	waits := func(text string) []string {
		held := map[string]bool{}
		var bad []string
		_, tries, _ := strings.Cut(text, "then try:\n")
		for _, line := range strings.Split(tries, "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || f[0] != "seqd" {
				continue
			}
			switch f[1] {
			case "acquire":
				held[f[len(f)-1]] = true
			case "lock":
				for i, w := range f {
					if w == "--" && held[f[i-1]] {
						bad = append(bad, line)
					}
				}
			}
		}
		return bad
	}
	if bad := waits("then try:\n  seqd acquire --ttl 30s demo\n  seqd lock demo -- true\n"); len(bad) != 1 {
		t.Fatalf("the check missed a lock that waits for an acquire's TTL: %q", bad)
	}
	var plain, secure strings.Builder
	Plain{ZK: "zk:1"}.WriteReady(&plain, "a:1")
	(&Dev{Dir: Dir{Path: "/tmp/d", ZK: "zk:1"}}).WriteReady(&secure, "a:1")
	for _, text := range []string{plain.String(), secure.String()} {
		if bad := waits(text); len(bad) != 0 {
			t.Errorf("the ready text suggests %q, which waits for the acquire before it:\n%s", bad, text)
		}
	}
}

// The client certificate seqd init writes names an identity a policy can
// name (no space): under a policy, a rule for it lets client.env work.
func TestClientCertificateNamesAnIdentity(t *testing.T) {
	l := Dir{Path: filepath.Join(t.TempDir(), "d"), Addr: "https://127.0.0.1:7070", ZK: "127.0.0.1:2181"}
	if err := Write(l, []string{"localhost"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(l.File(ClientCertFile))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		t.Fatalf("%s holds no PEM block", ClientCertFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	id := policy.CertIdentity(cert)
	if why := policy.ValidIdentity(id); why != "" || id != ClientIdentity {
		t.Errorf("the client certificate names %q (%s), want seqd-client, an identity a policy can name", id, why)
	}
}
