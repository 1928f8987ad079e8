package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Users of the images: the seqd image's USER and the zookeeper image's
// (which its entrypoint switches to).
const (
	seqdUID      = 65532
	zookeeperUID = 1000
)

// TestComposeSecretsScript: scripts/compose-secrets.sh (seqd init) writes
// every file the compose files mount, each readable by the user of the
// container that mounts it and by nobody it need not be; a second run
// keeps what is there.
func TestComposeSecretsScript(t *testing.T) {
	compose := requireTool(t, "docker-compose")
	bin := filepath.Join(t.TempDir(), "seqd")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/seqd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "secrets")
	script := func() string {
		t.Helper()
		cmd := exec.Command("bash", "scripts/compose-secrets.sh")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "SEQD_COMPOSE_SECRETS="+dir, "SEQD_BIN="+bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("compose-secrets.sh: %v\n%s", err, out)
		}
		return string(out)
	}
	script()

	// Every secret file and bind mount under deploy/compose/secrets/ of
	// both compose files, by the service that reads it.
	readers := map[string][]string{}
	for _, files := range [][]string{{"docker-compose.yml"}, {"docker-compose.yml", "deploy/compose/zk-tls.yml"}} {
		var args []string
		for _, f := range files {
			args = append(args, "-f", f)
		}
		out := mustRun(t, repoRoot, compose, append(args, "config")...)
		resolved := filepath.Join(t.TempDir(), "compose.yml")
		os.WriteFile(resolved, []byte(out), 0o644)
		doc := yamlDocs(t, resolved)[0]
		secretFile := map[string]string{}
		for name, s := range get(doc, "secrets").(map[string]any) {
			secretFile[name], _ = get(s, "file").(string)
		}
		for name, svc := range get(doc, "services").(map[string]any) {
			secrets, _ := get(svc, "secrets").([]any)
			for _, s := range secrets {
				f := secretFile[get(s, "source").(string)]
				readers[filepath.Base(f)] = append(readers[filepath.Base(f)], name)
			}
			volumes, _ := get(svc, "volumes").([]any)
			for _, v := range volumes {
				if src, _, _ := strings.Cut(v.(string), ":"); strings.Contains(src, "/deploy/compose/secrets/") {
					readers[filepath.Base(src)] = append(readers[filepath.Base(src)], name)
				}
			}
		}
	}
	if len(readers) < 8 {
		t.Fatalf("found %d secret files in the compose files: %v; is the parsing still right?", len(readers), readers)
	}
	root := os.Geteuid() == 0
	for file, services := range readers {
		st, err := os.Stat(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s, mounted by %v: %v", file, services, err)
			continue
		}
		if !root {
			continue // the script only warns: nothing can be given to the containers' users
		}
		uid, mode := int(st.Sys().(*syscall.Stat_t).Uid), st.Mode().Perm()
		for _, svc := range services {
			want := seqdUID
			switch {
			case strings.HasPrefix(svc, "zk"):
				want = zookeeperUID
			case svc == "prometheus":
				want = -1 // nobody: only world-readable files
			}
			if mode&0o004 == 0 && uid != want {
				t.Errorf("%s (uid %d, mode %v) is mounted by %s, which runs as uid %d and cannot read it", file, uid, mode, svc, want)
			}
		}
		if mode&0o004 != 0 && file != "ca.pem" && !strings.HasSuffix(file, ".keys") && file != "server.pem" && file != "client.pem" {
			t.Errorf("%s is readable by anyone (mode %v)", file, mode)
		}
	}
	if out := script(); !strings.Contains(out, "kept") {
		t.Errorf("a second run: %q, want the directory kept", out)
	}
}
