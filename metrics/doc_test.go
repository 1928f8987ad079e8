package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// collecting is a Registerer that keeps what is registered.
type collecting struct{ cs []prometheus.Collector }

func (c *collecting) Register(x prometheus.Collector) error { c.cs = append(c.cs, x); return nil }
func (c *collecting) MustRegister(xs ...prometheus.Collector) {
	c.cs = append(c.cs, xs...)
}
func (c *collecting) Unregister(prometheus.Collector) bool { return false }

// metricRow is a metric as the code defines it or the doc lists it.
type metricRow struct {
	typ    string
	labels string // comma-separated, in order
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// codeMetrics are the seqd_ series the daemon's and the store's collectors
// define, with their types and label names.
func codeMetrics(t *testing.T) map[string]metricRow {
	t.Helper()
	var reg collecting
	New(&reg, Options{})
	NewStore(&reg)
	out := map[string]metricRow{}
	for _, c := range reg.cs {
		typ := ""
		switch c.(type) {
		case *prometheus.CounterVec:
			typ = "counter"
		case *prometheus.GaugeVec:
			typ = "gauge"
		case *prometheus.HistogramVec, prometheus.Histogram:
			typ = "histogram"
		case prometheus.Gauge:
			typ = "gauge"
		case prometheus.Counter:
			typ = "counter"
		default:
			t.Fatalf("a collector of type %T: teach the test its metric type", c)
		}
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			s := d.String()
			name := descName.FindStringSubmatch(s)
			labels := descLabels.FindStringSubmatch(s)
			if name == nil || labels == nil {
				t.Fatalf("cannot read the name and labels of %s", s)
			}
			out[name[1]] = metricRow{typ, strings.ReplaceAll(labels[1], " ", "")}
		}
	}
	return out
}

// docMetrics reads the table of docs/operating.md's Metrics section: name,
// type and the label names (the first backquoted word of each of the
// cell's comma-separated items).
func docMetrics(t *testing.T) (map[string]metricRow, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(seqd_[a-z_]+)` \\| ([a-z]+) \\| ([^|]*(?:\\\\\\|[^|]*)*) \\|")
	label := regexp.MustCompile("`([a-z_]+)`")
	rows, lines := map[string]metricRow{}, map[string]int{}
	_, section, _ := strings.Cut(string(b), "\n## Metrics\n")
	before := strings.Count(string(b), "\n") - strings.Count(section, "\n")
	section, _, _ = strings.Cut(section, "\n## ")
	for i, line := range strings.Split(section, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("docs/operating.md:%d: %s is listed twice", before+i+1, m[1])
		}
		var names []string
		for _, item := range strings.Split(m[3], ", ") {
			if l := label.FindStringSubmatch(item); l != nil {
				names = append(names, l[1])
			}
		}
		rows[m[1]] = metricRow{m[2], strings.Join(names, ",")}
		lines[m[1]] = before + i + 1
	}
	return rows, lines
}

// compareMetrics lists where the doc's table and the code differ.
func compareMetrics(code, doc map[string]metricRow, lines map[string]int) []string {
	var problems []string
	for _, name := range sortedKeys(code) {
		d, ok := doc[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("docs/operating.md's metric table lacks %s (%s, labels %q)", name, code[name].typ, code[name].labels))
		case d != code[name]:
			problems = append(problems, fmt.Sprintf("docs/operating.md:%d: %s is a %s with labels %q in the doc, a %s with labels %q in the code", lines[name], name, d.typ, d.labels, code[name].typ, code[name].labels))
		}
	}
	for _, name := range sortedKeys(doc) {
		if _, ok := code[name]; !ok {
			problems = append(problems, fmt.Sprintf("docs/operating.md:%d: %s is in the table but no collector defines it", lines[name], name))
		}
	}
	return problems
}

// TestMetricsTableMatchesTheCode: docs/operating.md lists every seqd_
// series the daemon and the store export, once, with its type and labels,
// and nothing they do not export.
func TestMetricsTableMatchesTheCode(t *testing.T) {
	code := codeMetrics(t)
	doc, lines := docMetrics(t)
	if len(code) < 20 {
		t.Fatalf("found %d metrics in the code: is the reading still right? %v", len(code), code)
	}
	for _, p := range compareMetrics(code, doc, lines) {
		t.Error(p)
	}
}

// TestMetricsTableCheckCatchesAGap is the check's negative control: a row
// missing, a label dropped and a row the code lacks are each caught.
func TestMetricsTableCheckCatchesAGap(t *testing.T) {
	code := codeMetrics(t)
	doc, lines := docMetrics(t)
	delete(doc, "seqd_leader")
	r := doc["seqd_releases_total"]
	r.labels = "lock"
	doc["seqd_releases_total"] = r
	doc["seqd_invented_total"] = metricRow{"counter", ""}
	p := strings.Join(compareMetrics(code, doc, lines), "\n")
	for _, want := range []string{"lacks seqd_leader (gauge", `seqd_releases_total is a counter with labels "lock" in the doc`, "seqd_invented_total is in the table but no collector"} {
		if !strings.Contains(p, want) {
			t.Errorf("problems %q do not say %q", p, want)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestDashboardAndRulesUseDocumentedMetrics: every seqd_ series the Grafana
// dashboard and the alert rules query is one the collectors define (and
// so, by TestMetricsTableMatchesTheCode, one the doc lists).
func TestDashboardAndRulesUseDocumentedMetrics(t *testing.T) {
	code := codeMetrics(t)
	series := regexp.MustCompile(`seqd_[a-z_]+`)
	for _, f := range []string{"deploy/grafana/seqd.json", "deploy/prometheus/alerts.yml"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, s := range series.FindAllString(string(b), -1) {
			base := s
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if _, ok := code[base]; !ok {
					base = strings.TrimSuffix(base, suffix)
				}
			}
			if _, ok := code[base]; !ok {
				t.Errorf("%s uses %s, which no collector defines", f, s)
			}
			used++
		}
		if used == 0 {
			t.Errorf("%s uses no seqd_ series: is the reading still right?", f)
		}
	}
}
