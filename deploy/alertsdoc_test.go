package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ruleAlerts are the alerts of deploy/prometheus/alerts.yml, by name, with
// their severity.
func ruleAlerts(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out[r.Alert] = r.Labels["severity"]
			}
		}
	}
	return out
}

// docAlerts reads the table of docs/operating.md's "What to alert on":
// alert, severity, and the line.
func docAlerts(t *testing.T) (map[string]string, map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `(Seqd[A-Za-z]+)` \\| ([a-z]+) \\|")
	sev, lines := map[string]string{}, map[string]int{}
	for i, line := range strings.Split(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			sev[m[1]], lines[m[1]] = m[2], i+1
		}
	}
	return sev, lines
}

func compareAlerts(rules, doc map[string]string, lines map[string]int) []string {
	var problems []string
	for _, name := range sortedNames(rules) {
		switch d, ok := doc[name]; {
		case !ok:
			problems = append(problems, fmt.Sprintf("docs/operating.md's alert table lacks %s (severity %s)", name, rules[name]))
		case d != rules[name]:
			problems = append(problems, fmt.Sprintf("docs/operating.md:%d: %s is %s in the doc, %s in alerts.yml", lines[name], name, d, rules[name]))
		}
	}
	for _, name := range sortedNames(doc) {
		if _, ok := rules[name]; !ok {
			problems = append(problems, fmt.Sprintf("docs/operating.md:%d: %s is in the table but not in alerts.yml", lines[name], name))
		}
	}
	return problems
}

// TestAlertTableMatchesTheRules: docs/operating.md's alert table lists every
// alert of deploy/prometheus/alerts.yml with its severity, and no other;
// the negative control drops a row and changes a severity.
func TestAlertTableMatchesTheRules(t *testing.T) {
	rules := ruleAlerts(t)
	doc, lines := docAlerts(t)
	if len(rules) < 5 {
		t.Fatalf("found %d alerts in alerts.yml: is the reading still right? %v", len(rules), rules)
	}
	for _, p := range compareAlerts(rules, doc, lines) {
		t.Error(p)
	}
	broken := map[string]string{}
	for k, v := range doc {
		broken[k] = v
	}
	delete(broken, "SeqdNoLeader")
	broken["SeqdDown"] = "critical"
	p := strings.Join(compareAlerts(rules, broken, lines), "\n")
	if !strings.Contains(p, "lacks SeqdNoLeader") || !strings.Contains(p, "SeqdDown is critical in the doc, warning in alerts.yml") {
		t.Errorf("the control: problems %q miss the dropped row or the changed severity", p)
	}
}

func sortedNames(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
