package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/seqd/seqd/metrics"
)

// Paths relative to this package's directory, where go test runs.
const (
	repoRoot     = ".."
	promConfig   = "prometheus/prometheus.yml"
	alertRules   = "prometheus/alerts.yml"
	alertTests   = "prometheus/alerts_test.yml"
	badRules     = "prometheus/testdata/bad_alerts.yml"
	k8sManifests = "k8s"
	dashboard    = "grafana/seqd.json"
	grafanaDS    = "grafana/provisioning/datasources/prometheus.yml"
	grafanaDash  = "grafana/provisioning/dashboards/seqd.yml"
)

// electionMetrics are exported by the elections' collectors, which the
// dashboard charts alongside the locks' metrics.
var electionMetrics = []string{"seqd_leader", "seqd_elections_won_total", "seqd_leader_changes_observed_total"}

// exportedMetrics returns every metric name seqd's collectors declare (the
// daemon's and the store's), with the series a histogram exposes, read from
// the collectors' descriptions so that the list cannot drift from the code.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	rec := &descRecorder{}
	metrics.New(rec, metrics.Options{})
	metrics.NewStore(rec)
	if len(rec.names) == 0 {
		t.Fatal("the collectors declared no metric")
	}
	return rec.names
}

// descRecorder is a prometheus.Registerer that keeps the names of what is
// registered on it.
type descRecorder struct{ names []string }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *descRecorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		r.names = append(r.names, m[1])
		_, vec := c.(*prometheus.HistogramVec)
		if _, ok := c.(prometheus.Histogram); ok || vec {
			r.names = append(r.names, m[1]+"_bucket", m[1]+"_sum", m[1]+"_count")
		}
	}
	return nil
}

func (r *descRecorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *descRecorder) Unregister(prometheus.Collector) bool { return false }

// requireTool fails (never skips) when a tool CI installs is missing: a check
// that silently does not run is worse than a red build.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found in PATH (%v): run scripts/deps.sh, as `make test` does", name, err)
	}
	return p
}

// run runs a command in dir and returns its combined output and error.
func run(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustRun(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	out, err := run(t, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
	return out
}

func TestPromtoolCheckConfig(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	// Also checks the rule files it names, resolved next to the config.
	out := mustRun(t, ".", promtool, "check", "config", promConfig)
	if !strings.Contains(out, "1 rule files found") {
		t.Errorf("promtool check config: got %q, want the alert rules loaded (\"1 rule files found\")", out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	mustRun(t, ".", promtool, "check", "rules", alertRules)
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	mustRun(t, ".", promtool, "test", "rules", alertTests)
}

// TestPromtoolRejectsBrokenRules is the negative control: if promtool accepted
// a rules file with a syntax error, the checks above would prove nothing.
func TestPromtoolRejectsBrokenRules(t *testing.T) {
	t.Parallel()
	promtool := requireTool(t, "promtool")
	out, err := run(t, ".", promtool, "check", "rules", badRules)
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("promtool check rules %s: got error %v, want a non-zero exit\n%s", badRules, err, out)
	}
	if !strings.Contains(out, "parse error") {
		t.Errorf("promtool check rules %s: got %q, want it to report the parse error", badRules, out)
	}
}

var (
	alertNameRe  = regexp.MustCompile(`(?m)^\s*-\s*alert:\s*(\S+)`)
	testedNameRe = regexp.MustCompile(`(?m)^\s*alertname:\s*(\S+)`)
	metricRe     = regexp.MustCompile(`seqd_[a-z_]+`)
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func submatches(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestEveryAlertHasAUnitTest: promtool test rules passes happily when an
// alert has no test at all.
func TestEveryAlertHasAUnitTest(t *testing.T) {
	t.Parallel()
	alerts := submatches(alertNameRe, readFile(t, alertRules))
	tested := submatches(testedNameRe, readFile(t, alertTests))
	want := []string{
		"SeqdLockLost",
		"SeqdSessionExpired",
		"SeqdStaleTokensRejected",
		"SeqdTokenRegression",
		"SeqdZooKeeperDisconnected",
	}
	for _, name := range want {
		if !slices.Contains(alerts, name) {
			t.Errorf("alerts.yml: alert %s missing; have %v", name, alerts)
		}
	}
	for _, name := range alerts {
		if !slices.Contains(tested, name) {
			t.Errorf("alerts_test.yml: no test for alert %s; tested %v", name, tested)
		}
	}
}

// TestRulesUseExportedMetrics: a misspelt metric in an expression is not a
// syntax error, it is an alert that can never fire. The unit tests' input
// series are checked too, or a test could pass on a series nobody exports.
func TestRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	exported := exportedMetrics(t)
	for _, path := range []string{alertRules, alertTests} {
		used := metricRe.FindAllString(readFile(t, path), -1)
		if path == alertRules && len(used) == 0 {
			t.Fatalf("%s: no seqd_ metric found; is the regexp still right?", path)
		}
		for _, name := range used {
			if !slices.Contains(exported, name) {
				t.Errorf("%s: metric %q is not one seqd exports %v", path, name, exported)
			}
		}
	}
}

// yamlDocs parses every document of a YAML file, mappings as
// map[string]any and sequences as []any, and fails the test when the file
// cannot be read or is not YAML.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	docs, err := parseYAML(path)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func parseYAML(path string) ([]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []any
	for dec := yaml.NewDecoder(f); ; {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w", path, err)
		}
		docs = append(docs, doc)
	}
}

// TestParseYAML: the parser the checks read manifests with gives every
// document in the shape get walks, and refuses a file that is not YAML.
func TestParseYAML(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("kind: ConfigMap\ndata: {SEQD_ZK: \"a:2181\"}\n---\nspec:\n  containers: [{name: seqd}]\n  replicas: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("kind: [ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, err := parseYAML(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || get(docs[0], "data", "SEQD_ZK") != "a:2181" || get(docs[1], "spec", "containers", 0, "name") != "seqd" ||
		fmt.Sprint(get(docs[1], "spec", "replicas")) != "2" {
		t.Errorf("parsed %#v, want a ConfigMap and a spec with one container named seqd and 2 replicas", docs)
	}
	if docs, err := parseYAML(bad); err == nil {
		t.Errorf("control: an unclosed flow sequence parsed as %#v, want an error", docs)
	}
}

// get walks maps and lists: get(v, "spec", "containers", 0, "name").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestComposeConfig(t *testing.T) {
	t.Parallel()
	compose := requireTool(t, "docker-compose")
	mustRun(t, repoRoot, compose, "config", "-q")
	mustRun(t, repoRoot, compose, "-f", "docker-compose.yml", "-f", "deploy/compose/zk-tls.yml", "config", "-q")

	// The resolved file, for the structure the issue asks for.
	out := mustRun(t, repoRoot, compose, "config")
	resolved := filepath.Join(t.TempDir(), "compose.yml")
	if err := os.WriteFile(resolved, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	services, _ := get(yamlDocs(t, resolved), 0, "services").(map[string]any)
	for _, name := range []string{"zk1", "zk2", "zk3", "seqd1", "seqd2", "store", "prometheus", "grafana"} {
		if services[name] == nil {
			t.Errorf("docker-compose.yml: service %s missing", name)
		}
	}
	for _, zk := range []string{"zk1", "zk2", "zk3"} {
		if get(services, zk, "healthcheck", "test") == nil {
			t.Errorf("%s: no healthcheck, so depends_on service_healthy cannot work", zk)
		}
	}
	for _, name := range []string{"seqd1", "seqd2"} {
		if got, want := get(services, name, "environment", "SEQD_ZK"), "zk1:2181,zk2:2181,zk3:2181"; got != want {
			t.Errorf("%s: SEQD_ZK = %v, want %q", name, got, want)
		}
		if get(services, name, "environment", "SEQD_API_TOKEN_FILE") == nil &&
			get(services, name, "environment", "SEQD_INSECURE_LISTEN") == nil {
			t.Errorf("%s: listens on 0.0.0.0 without SEQD_API_TOKEN_FILE or SEQD_INSECURE_LISTEN: seqd would refuse to start", name)
		}
		for _, zk := range []string{"zk1", "zk2", "zk3"} {
			if got := get(services, name, "depends_on", zk, "condition"); got != "service_healthy" {
				t.Errorf("%s: depends_on %s condition = %v, want service_healthy", name, zk, got)
			}
		}
	}

	// Prometheus scrapes every seqd service on its container port.
	prom := readFile(t, promConfig)
	for _, target := range []string{`"seqd1:7070"`, `"seqd2:7070"`, `"store:7071"`} {
		if !strings.Contains(prom, target) {
			t.Errorf("%s: no scrape target %s", promConfig, target)
		}
	}
}

func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(k8sManifests, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", k8sManifests, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { checkSidecarManifest(t, f) })
	}
}

// checkSidecarManifest checks one example: a ConfigMap for the sidecar and
// an app Deployment with the seqd sidecar reading it; a sidecar that
// campaigns does so with its pod's name, in a Deployment of several
// replicas.
func checkSidecarManifest(t *testing.T, f string) {
	t.Helper()
	byKind := map[string][]any{}
	for i, doc := range yamlDocs(t, f) {
		kind, _ := get(doc, "kind").(string)
		if kind == "" || get(doc, "apiVersion") == nil || get(doc, "metadata", "name") == nil {
			t.Errorf("%s: document %d lacks kind, apiVersion or metadata.name", f, i)
		}
		byKind[kind] = append(byKind[kind], doc)
	}
	if len(byKind["ConfigMap"]) != 1 || len(byKind["Deployment"]) != 1 {
		t.Fatalf("%s: want one ConfigMap and one Deployment, got %d and %d", f, len(byKind["ConfigMap"]), len(byKind["Deployment"]))
	}
	cm, dep := byKind["ConfigMap"][0], byKind["Deployment"][0]
	if zk, _ := get(cm, "data", "SEQD_ZK").(string); strings.Count(zk, ":2181") < 3 {
		t.Errorf("ConfigMap SEQD_ZK = %q, want every server of a 3-node ensemble", zk)
	}
	if got := get(cm, "data", "SEQD_LISTEN"); got != "127.0.0.1:7070" {
		t.Errorf("ConfigMap SEQD_LISTEN = %v, want 127.0.0.1:7070 (loopback, shared in the pod)", got)
	}

	labels, _ := get(dep, "spec", "template", "metadata", "labels").(map[string]any)
	selector, _ := get(dep, "spec", "selector", "matchLabels").(map[string]any)
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("Deployment selector %s=%v does not match the pod template labels %v", k, v, labels)
		}
	}

	containers, _ := get(dep, "spec", "template", "spec", "containers").([]any)
	var sidecar any
	for _, c := range containers {
		if get(c, "name") == "seqd" {
			sidecar = c
		}
		if get(c, "securityContext", "readOnlyRootFilesystem") != true ||
			get(c, "securityContext", "allowPrivilegeEscalation") != false {
			t.Errorf("container %v: want readOnlyRootFilesystem and no privilege escalation", get(c, "name"))
		}
		if get(c, "resources", "requests") == nil {
			t.Errorf("container %v: no resource requests", get(c, "name"))
		}
	}
	if len(containers) < 2 || sidecar == nil {
		t.Fatalf("Deployment: want an app container and a seqd sidecar, got %d containers", len(containers))
	}
	if get(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != true {
		t.Errorf("pod securityContext: want runAsNonRoot")
	}
	if get(sidecar, "envFrom", 0, "configMapRef", "name") != get(cm, "metadata", "name") {
		t.Errorf("seqd sidecar: envFrom %v, want the ConfigMap %v", get(sidecar, "envFrom"), get(cm, "metadata", "name"))
	}
	probe, _ := json.Marshal(get(sidecar, "readinessProbe"))
	if !strings.Contains(string(probe), "127.0.0.1:7070/readyz") {
		t.Errorf("seqd sidecar: readinessProbe %s, want a probe of http://127.0.0.1:7070/readyz", probe)
	}
	if get(sidecar, "lifecycle", "preStop") == nil {
		t.Errorf("seqd sidecar: no preStop hook")
	}
	env, _ := get(sidecar, "env").([]any)
	for _, e := range env {
		if get(e, "name") != "SEQD_CAMPAIGN" {
			continue
		}
		if v, _ := get(e, "value").(string); !strings.Contains(v, "=$(POD_NAME)") {
			t.Errorf("seqd sidecar: SEQD_CAMPAIGN = %q, want NAME=$(POD_NAME)", v)
		}
		var podName bool
		for _, p := range env {
			podName = podName || get(p, "name") == "POD_NAME" && get(p, "valueFrom", "fieldRef", "fieldPath") == "metadata.name"
		}
		if !podName {
			t.Errorf("seqd sidecar campaigns without POD_NAME from metadata.name")
		}
		if r, _ := strconv.Atoi(fmt.Sprint(get(dep, "spec", "replicas"))); r < 2 {
			t.Errorf("a campaigning sidecar in a Deployment of %v replicas: nobody to take over", get(dep, "spec", "replicas"))
		}
	}
}

// TestGrafanaDashboard: every query of the dashboard names metrics seqd
// exports (a misspelt name draws an empty panel, not an error), its
// datasource is the one provisioned, and compose mounts both.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	known := append(exportedMetrics(t), electionMetrics...)
	var d struct {
		UID    string `json:"uid"`
		Inputs []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			PluginID string `json:"pluginId"`
		} `json:"__inputs"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Query      any    `json:"query"`
				IncludeAll bool   `json:"includeAll"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readFile(t, dashboard)), &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	if len(d.Panels) == 0 {
		t.Fatalf("%s: no panels", dashboard)
	}
	// The datasource is a variable (provisioned: the default one;
	// imported: the one the import's input names), so that the dashboard
	// imports into an existing Grafana; the job variable lists every job
	// that exports seqd_build_info, the store's included.
	if len(d.Inputs) != 1 || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("%s: __inputs %+v, want one prometheus datasource input", dashboard, d.Inputs)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = fmt.Sprintf("%s %v all=%v", v.Type, v.Query, v.IncludeAll)
	}
	if vars["datasource"] != "datasource prometheus all=false" {
		t.Errorf("%s: datasource variable %q, want a prometheus datasource variable", dashboard, vars["datasource"])
	}
	if !strings.Contains(vars["job"], "label_values(seqd_build_info, job)") || !strings.HasSuffix(vars["job"], "all=true") {
		t.Errorf("%s: job variable %q, want the jobs of seqd_build_info (daemons and store) with All", dashboard, vars["job"])
	}
	if !strings.Contains(readFile(t, grafanaDS), "isDefault: true") {
		t.Errorf("%s: the provisioned datasource is not the default the dashboard's variable picks", grafanaDS)
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource uid %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			names := metricRe.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no seqd metric", p.Title, q.Expr)
			}
			for _, n := range names {
				used[n] = true
				if !slices.Contains(known, n) {
					t.Errorf("panel %q: metric %q is not one seqd exports", p.Title, n)
				}
			}
		}
	}
	for _, want := range []string{"seqd_grants_total", "seqd_stale_tokens_rejected_total", "seqd_lock_waiters", "seqd_acquire_duration_seconds_bucket", "seqd_zk_connected", "seqd_leader", "seqd_lock_wait_seconds_bucket", "seqd_lock_hold_seconds_bucket"} {
		if !used[want] {
			t.Errorf("%s: no panel charts %s", dashboard, want)
		}
	}
	compose := readFile(t, filepath.Join(repoRoot, "docker-compose.yml"))
	for _, mount := range []string{"./deploy/grafana/provisioning:", "./deploy/" + dashboard + ":/var/lib/grafana/dashboards/"} {
		if !strings.Contains(compose, mount) {
			t.Errorf("docker-compose.yml: grafana does not mount %s", mount)
		}
	}
	if !strings.Contains(readFile(t, grafanaDash), "path: /var/lib/grafana/dashboards") {
		t.Errorf("%s: does not load /var/lib/grafana/dashboards", grafanaDash)
	}
}
