package clients_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const fenceScriptFile = "../fence/redisfence/fence.lua"

// TestFenceScriptInPackages: the Redis fence's script is one file,
// fence/redisfence/fence.lua (Go embeds it); the Python wheel and sdist,
// the Java jar and the npm package, each built as it ships, carry the same
// bytes; and no other tracked file holds its body (most of its lines). The
// control: a file holding the body, written in another language's string,
// is found.
func TestFenceScriptInPackages(t *testing.T) {
	want, err := os.ReadFile(fenceScriptFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	out, err := run(t, 5*time.Minute, "python", nil, python(t), "-c",
		"import sys; sys.path.insert(0, 'build_backend'); import seqd_backend as b; print(b.build_wheel(sys.argv[1])); print(b.build_sdist(sys.argv[1]))", dir)
	if err != nil {
		t.Fatalf("building the Python wheel and sdist: %v\n%s", err, out.all)
	}
	names := strings.Fields(out.stdout)
	if len(names) != 2 {
		t.Fatalf("the build backend printed %q, want a wheel and an sdist", out.stdout)
	}
	checkScript(t, "the Python wheel", want, member(t, filepath.Join(dir, names[0]), "seqd/fence/fence.lua"))
	checkScript(t, "the Python sdist", want, member(t, filepath.Join(dir, names[1]), strings.TrimSuffix(names[1], ".tar.gz")+"/seqd/fence/fence.lua"))

	if out, err := run(t, 5*time.Minute, "java", nil, "bash", "build.sh"); err != nil {
		t.Fatalf("building the Java jar: %v\n%s", err, out.all)
	}
	checkScript(t, "the Java jar", want, member(t, filepath.Join("java", "build", "seqd-client.jar"), "dev/seqd/fence/fence.lua"))

	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed: the npm package is built with npm pack")
	}
	out, err = run(t, 5*time.Minute, "js", nil, npm, "pack", "--silent", "--pack-destination", dir)
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out.all)
	}
	fields := strings.Fields(out.stdout)
	if len(fields) == 0 {
		t.Fatalf("npm pack printed nothing")
	}
	checkScript(t, "the npm package", want, member(t, filepath.Join(dir, fields[len(fields)-1]), "package/lib/fence/fence.lua"))
	if _, err := os.Stat(filepath.Join("js", "lib", "fence", "fence.lua")); err == nil {
		t.Error("npm pack left its copy of the script in clients/js/lib/fence")
	}

	files, err := run(t, time.Minute, ".", nil, "git", "ls-files", "-z", "..")
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var holders []string
	for _, f := range strings.Split(files.stdout, "\x00") {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err == nil && holdsBody(want, b) {
			holders = append(holders, filepath.Clean(f))
		}
	}
	if len(holders) != 1 || holders[0] != filepath.Clean(fenceScriptFile) {
		t.Errorf("tracked files holding the script's body: %q, want only %s", holders, fenceScriptFile)
	}
	quoted := "SCRIPT = \"\"\"\n" + strings.ReplaceAll(string(want), "\n", "\n    ") + "\"\"\"\n"
	if !holdsBody(want, []byte(quoted)) {
		t.Error("control: a copy of the script in a Python string is not found")
	}
}

// holdsBody says whether text holds most of the script's code lines (those
// of 12 characters or more that are not comments), however indented.
func holdsBody(script, text []byte) bool {
	have := map[string]bool{}
	for _, l := range strings.Split(string(text), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	n, found := 0, 0
	for _, l := range strings.Split(string(script), "\n") {
		l = strings.TrimSpace(l)
		if len(l) < 12 || strings.HasPrefix(l, "--") {
			continue
		}
		n++
		if have[l] {
			found++
		}
	}
	return n > 0 && 2*found > n
}

func checkScript(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Errorf("%s carries %d bytes as the script, not the %d bytes of %s", what, len(got), len(want), fenceScriptFile)
	}
}

// member is the file name in the zip or .tar.gz archive at path.
func member(t *testing.T, path, name string) []byte {
	t.Helper()
	if z, err := zip.OpenReader(path); err == nil {
		defer z.Close()
		f, err := z.Open(name)
		if err != nil {
			t.Errorf("%s has no %s (%v)", path, name, err)
			return nil
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	for tr := tar.NewReader(gz); ; {
		h, err := tr.Next()
		if err == io.EOF {
			t.Errorf("%s has no %s", path, name)
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}
