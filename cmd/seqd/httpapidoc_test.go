package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seqd/seqd/testenv"
	"github.com/seqd/seqd/testenv/zktest"
)

// docs/http-api.md's curl session runs as written against a daemon and
// prints what its comments show, numbers aside.
func TestHTTPAPIDocCurlSession(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is not installed: %v", err)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n## A session with curl\n")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/http-api.md has no curl session block")
	}
	zkc := zktest.StartT(t, testenv.Options{})
	addr, _ := startServe(t, "--zk", zkc.ConnectString())
	cmd := exec.Command("sh", "-e", "-c", block)
	cmd.Env = append(os.Environ(), "SEQD_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the session: %v\n%s", err, out)
	}
	got := string(out)
	if n := strings.Count(got, `"sequencer":"demo@`); n != 2 {
		t.Errorf("the session printed %d leases (the acquire's and the renew's), want 2:\n%s", n, got)
	}
	for _, want := range []string{`"name":"demo","token":N,"sequencer":"demo@N"`, `{"valid":true,"current_token":N}`, `{"released":true}`, `with token N: unknown lease`, `"code":"lost"}` + "\n409"} {
		if !regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(want), "N", `[0-9]+`)).MatchString(got) {
			t.Errorf("the session printed\n%s\nwant %s in it", got, want)
		}
	}
}
