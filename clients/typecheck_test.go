package clients_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pythonSources are what the Python checks cover: the package, its tests,
// the fences' tests and the build backend.
var pythonSources = []string{"seqd", "tests", "fence_tests", "integration_tests", "build_backend"}

// toozSources are what they cover of the tooz adapter (contrib/tooz).
var toozSources = []string{"seqd_tooz", "tooz_tests"}

// runIn runs name args in dir and returns whether it passed, and its output.
func runIn(t *testing.T, dir, name string, args ...string) (bool, string) {
	t.Helper()
	out, err := run(t, 5*time.Minute, dir, nil, name, args...)
	return err == nil, out.all
}

// TestPythonChecks runs pyflakes and mypy (settings in pyproject.toml)
// over the Python client: both must be clean. The controls: each catches
// its kind of mistake in a file written for it.
func TestPythonChecks(t *testing.T) {
	t.Parallel()
	py := python(t, "pyflakes", "mypy")
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = t.TempDir()
	}
	mypy := []string{"-m", "mypy", "--cache-dir", filepath.Join(cache, "seqd-mypy")}
	if ok, out := runIn(t, "python", py, append([]string{"-m", "pyflakes"}, pythonSources...)...); !ok {
		t.Errorf("pyflakes over clients/python:\n%s", out)
	}
	if ok, out := runIn(t, "python", py, append(mypy, pythonSources...)...); !ok {
		t.Errorf("mypy over clients/python:\n%s", out)
	}
	// The tooz adapter, with the client on its mypy_path (its pyproject.toml).
	if ok, out := runIn(t, "../contrib/tooz", py, append([]string{"-m", "pyflakes"}, toozSources...)...); !ok {
		t.Errorf("pyflakes over contrib/tooz:\n%s", out)
	}
	if ok, out := runIn(t, "../contrib/tooz", py, append(mypy, toozSources...)...); !ok {
		t.Errorf("mypy over contrib/tooz:\n%s", out)
	}

	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "unused.py"), []byte("import os\n"), 0o600)
	os.WriteFile(filepath.Join(bad, "mistyped.py"), []byte("def f(n: int) -> str:\n    return n\n"), 0o600)
	if ok, out := runIn(t, bad, py, "-m", "pyflakes", "unused.py"); ok || !strings.Contains(out, "imported but unused") {
		t.Errorf("control: pyflakes passed an unused import: %s", out)
	}
	if ok, out := runIn(t, bad, py, append(mypy, "mistyped.py")...); ok || !strings.Contains(out, "Incompatible return value") {
		t.Errorf("control: mypy passed a mistyped return: %s", out)
	}
}

// TestJSTypes checks the JavaScript client's declarations: tsc --noEmit
// over index.d.ts, lib/fence/index.d.ts and a program that uses every
// export (js/typecheck/usage.ts), and typecheck/exports.mjs, which holds
// each entry point's declarations to its code (the same exports, classes
// and methods). TypeScript is a devDependency of clients/js, installed by
// npm ci from its lock file. The controls: declarations without an export
// the code has, and with a method it lacks, are refused; so is a program
// that calls the client with the wrong types.
func TestJSTypes(t *testing.T) {
	t.Parallel()
	node, dir := node(t), "js"
	npmDeps(t, dir)
	tsc := filepath.Join("node_modules", ".bin", "tsc")
	if ok, out := runIn(t, dir, tsc, "-p", filepath.Join("typecheck", "tsconfig.json")); !ok {
		t.Errorf("tsc --noEmit over the JavaScript client's declarations:\n%s", out)
	}
	if ok, out := runIn(t, dir, node, filepath.Join("typecheck", "exports.mjs")); !ok {
		t.Errorf("the declarations do not match the code:\n%s", out)
	}

	dts, err := os.ReadFile(filepath.Join(dir, "index.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	noExport := strings.Replace(string(dts), "export function newLeaseId(): string;", "", 1)
	extraMethod := strings.Replace(string(dts), "  throwIfLost(): void;", "  throwIfLost(): void;\n  renewNow(): Promise<void>;", 1)
	if noExport == string(dts) || extraMethod == string(dts) {
		t.Fatal("the controls' edits no longer match index.d.ts")
	}
	bad := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"no-export.d.ts", noExport, "the code exports newLeaseId, which is not declared"},
		{"extra-method.d.ts", extraMethod, "HeldLease.renewNow() is declared but the code's HeldLease has no such method"},
	} {
		f := filepath.Join(bad, c.name)
		os.WriteFile(f, []byte(c.text), 0o600)
		if ok, out := runIn(t, dir, node, filepath.Join("typecheck", "exports.mjs"), ".="+f); ok || !strings.Contains(out, c.want) {
			t.Errorf("control %s: exports.mjs = %v\n%s\nwant a failure saying %q", c.name, ok, out, c.want)
		}
	}
	usage := filepath.Join(dir, "typecheck", "usage-control.ts")
	t.Cleanup(func() { os.Remove(usage) })
	os.WriteFile(usage, []byte("import { Client } from '../index.js';\nexport const p: Promise<unknown> = new Client().acquire(42);\n"), 0o600)
	abs, _ := filepath.Abs(filepath.Join(dir, "node_modules", "@types"))
	if ok, out := runIn(t, dir, tsc, "--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
		"--types", "node", "--typeRoots", abs, filepath.Join("typecheck", "usage-control.ts")); ok || !strings.Contains(out, "TS2345") {
		t.Errorf("control: tsc passed acquire(42):\n%s", out)
	}
}
