package layering

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/seqd/seqd/"

// TestImportRules: a resource (fence, store) links no ZooKeeper client and
// no lock library; fence links nothing outside the standard library;
// api, the wire contract, adds only fence to it; client, what a program
// that talks to a daemon links, adds only api, fence and the
// OpenTelemetry API (no ZooKeeper client, no Prometheus, no protobuf, no
// OpenTelemetry SDK); the daemon core (sequencer) does
// not link the client and does not import net/http itself (how a request
// becomes a call is sequencer/httpapi's); zklock is a library
// of its own, linking neither seqd's metrics nor internal packages; and the
// seqd binary does not link package testing.
func TestImportRules(t *testing.T) {
	// The OpenTelemetry API, with which the client sends its caller's
	// trace context: these three packages and what they import, nothing
	// of the SDK or an exporter.
	var otelAPI []string
	for _, p := range []string{"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/trace", "go.opentelemetry.io/otel/propagation"} {
		otelAPI = append(otelAPI, listDeps(t, p)...)
	}
	for _, p := range otelAPI {
		if strings.HasPrefix(p, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(p, "go.opentelemetry.io/otel/exporters/") {
			t.Fatalf("control: the OpenTelemetry API's packages hold %s", p)
		}
	}
	for _, r := range []struct {
		pkg    string
		forbid []string
		// onlyStd: outside the standard library, nothing but these.
		onlyStd bool
		beyond  []string
		// noImport: the package's own files import none of these. A
		// dependency rule cannot say it of net/http, which client_golang
		// links into every package that counts.
		noImport []string
		why      string
	}{
		{pkg: "fence", onlyStd: true, why: "a resource that imports fence must pull in nothing but the standard library"},
		{pkg: "api", onlyStd: true, beyond: []string{mod + "fence"}, why: "the wire contract must pull in nothing but the standard library and fence"},
		{pkg: "client", onlyStd: true, beyond: append([]string{mod + "fence", mod + "api"}, otelAPI...), why: "a program that talks to a daemon must pull in nothing but the standard library, api, fence and the OpenTelemetry API (no ZooKeeper client, client_golang, protobuf or OpenTelemetry SDK)"},
		{pkg: "fencecheck", onlyStd: true, beyond: append([]string{mod + "fence", mod + "api", mod + "client", mod + "internal/humantime"}, otelAPI...), why: "the conformance cases run from a resource's own Go test: they must pull in nothing but the standard library, the daemon's client and the duration text the command line shares (no ZooKeeper client, no daemon, no CLI)"},
		{pkg: "internal/humantime", onlyStd: true, why: "fencecheck and the command line share it: it must pull in nothing but the standard library"},
		{pkg: "sequencer", forbid: []string{mod + "client"}, why: "the daemon speaks the wire contract (api), not the client"},
		{pkg: "sequencer", noImport: []string{"net/http"}, why: "sequencer is the lease service: routes, decoding and statuses belong to sequencer/httpapi, which calls it"},
		{pkg: "sequencer/policy", onlyStd: true, beyond: []string{mod + "fence", mod + "api"}, why: "who a caller is and what the policy allows is judged from the standard library and the wire contract alone"},
		{pkg: "sequencer/httpapi", forbid: []string{mod + "zklock", "github.com/go-zookeeper/zk"}, why: "the transport calls an interface of the service's verbs: it links no ZooKeeper client"},
		{pkg: "store", forbid: []string{"github.com/go-zookeeper/zk", mod + "zklock", mod + "sequencer"}, why: "a resource must not pull in ZooKeeper"},
		{pkg: "zklock", forbid: []string{mod + "metrics", mod + "internal/", mod + "sequencer", "github.com/prometheus/"}, why: "zklock is a library of its own"},
		{pkg: "cmd/seqd", forbid: []string{"testing"}, why: "the binary must not link package testing"},
	} {
		if len(r.noImport) > 0 {
			for _, imp := range listImports(t, mod+r.pkg, "{{join .Imports \"\\n\"}}") {
				if slices.Contains(r.noImport, imp) {
					t.Errorf("%s imports %s: %s", r.pkg, imp, r.why)
				}
			}
		}
		for _, dep := range listDeps(t, mod+r.pkg) {
			if dep == mod+r.pkg {
				continue
			}
			if r.onlyStd && !slices.Contains(r.beyond, dep) {
				if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") {
					t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
			for _, f := range r.forbid {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) {
					t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
		}
	}
}

// TestFenceHelperImports: each database fence helper imports the
// standard library, package fence and its own driver, nothing else (no
// other driver, no ZooKeeper client, no Prometheus); sqlfence's driver is
// database/sql, so it links nothing outside the standard library but
// fence. The control: the rule run on the helpers' tests, which import
// testenv and the drivers, finds them.
func TestFenceHelperImports(t *testing.T) {
	for _, r := range []struct {
		pkg    string
		driver string // import path prefix of its driver; "" for database/sql
	}{
		{"fence/sqlfence", ""},
		{"fence/redisfence", "github.com/redis/go-redis/v9"},
	} {
		for _, imp := range listImports(t, mod+r.pkg, "{{join .Imports \"\\n\"}}") {
			if bad := foreignImport(imp, r.driver); bad {
				t.Errorf("%s imports %s: a fence helper imports only the standard library, fence and its driver", r.pkg, imp)
			}
		}
		for _, dep := range listDeps(t, mod+r.pkg) {
			for _, f := range []string{"github.com/go-zookeeper/zk", "github.com/prometheus/", mod + "zklock", mod + "sequencer", mod + "client", mod + "api"} {
				if dep == f || strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f) || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%s depends on %s: a fence helper must not pull in ZooKeeper, Prometheus or the daemon's client", r.pkg, dep)
				}
			}
			if r.driver == "" {
				if first, _, _ := strings.Cut(dep, "/"); strings.Contains(first, ".") && dep != mod+"fence" && dep != mod+r.pkg {
					t.Errorf("%s depends on %s: it must link the standard library and fence only", r.pkg, dep)
				}
			}
		}
	}
	var found int
	for _, imp := range listImports(t, mod+"fence/sqlfence", "{{join .TestImports \"\\n\"}}\n{{join .XTestImports \"\\n\"}}") {
		if foreignImport(imp, "") {
			found++
		}
	}
	if found == 0 {
		t.Error("control: sqlfence's tests import testenv and two drivers, but the rule finds nothing foreign in them")
	}
}

// foreignImport says whether imp is neither the standard library, fence,
// nor under driver.
func foreignImport(imp, driver string) bool {
	first, _, _ := strings.Cut(imp, "/")
	if !strings.Contains(first, ".") || imp == mod+"fence" {
		return false
	}
	return driver == "" || imp != driver && !strings.HasPrefix(imp, driver+"/")
}

func listImports(t *testing.T, pkg, format string) []string {
	t.Helper()
	out, err := exec.Command(goCommand(t), "list", "-f", format, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestNoReplace: go.mod has no replace directive. Go ignores the replace
// directives of a dependency, so a module that needs one cannot be
// imported (go get) or installed (go install …@version) by anyone else.
// The control: a go.mod with a replace is seen to have one.
func TestNoReplace(t *testing.T) {
	if got := replaces(t, "../../go.mod"); len(got) != 0 {
		t.Errorf("go.mod replaces %v: another module importing seqd would not get the replacement", got)
	}
	control := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(control, []byte("module example.com/m\n\ngo 1.22\n\nreplace example.com/x => ./x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := replaces(t, control); len(got) != 1 {
		t.Errorf("a go.mod with one replace: found %v, want it", got)
	}
}

// replaces lists the modules that the go.mod file at path replaces.
func replaces(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command(goCommand(t), "mod", "edit", "-json", path).Output()
	if err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var gomod struct {
		Replace []struct{ Old struct{ Path string } }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatalf("go mod edit -json %s: %v", path, err)
	}
	var mods []string
	for _, r := range gomod.Replace {
		mods = append(mods, r.Old.Path)
	}
	return mods
}

// goCommand finds the go command. It fails the test, rather than skipping
// it, when there is none: a skipped check passes silently.
func goCommand(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, serr := os.Stat(goTool); os.Getenv("GOROOT") == "" || serr != nil {
			t.Fatalf("no go command on PATH (%v) or in $GOROOT/bin", err)
		}
	}
	return goTool
}

// listDeps returns `go list -deps pkg`.
func listDeps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command(goCommand(t), "list", "-deps", pkg).Output()
	if err != nil {
		var stderr []byte
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestKubeIsAModuleOfItsOwn: contrib/kube, which links client-go, is a
// module of its own, so that the main module's graph (`go list -m all`)
// holds no Kubernetes module. The control: the same listing of
// contrib/kube's module finds client-go.
func TestKubeIsAModuleOfItsOwn(t *testing.T) {
	k8s := func(dir string) []string {
		t.Helper()
		cmd := exec.Command(goCommand(t), "list", "-m", "all")
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -m all in %s: %v", dir, err)
		}
		var mods []string
		for _, m := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(m, "k8s.io/") || strings.HasPrefix(m, "sigs.k8s.io/") {
				mods = append(mods, m)
			}
		}
		return mods
	}
	if got := k8s("../.."); len(got) != 0 {
		t.Errorf("the main module's graph holds %v: client-go belongs in contrib/kube's go.mod", got)
	}
	if got := k8s("../../contrib/kube"); !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, "k8s.io/client-go ") }) {
		t.Errorf("control: contrib/kube's graph lists %v, without client-go", got)
	}
}
