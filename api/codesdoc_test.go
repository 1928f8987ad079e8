package api

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// codeStatuses reads the Code constants of api.go with the HTTP status
// their comments give: "// CodeHeld (409): …".
func codeStatuses(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "api.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	status := regexp.MustCompile(`^Code\w+ \((\d{3})[,)]`)
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if len(v.Names) != 1 || !strings.HasPrefix(v.Names[0].Name, "Code") || len(v.Values) != 1 {
				continue
			}
			lit, ok := v.Values[0].(*ast.BasicLit)
			if !ok {
				continue
			}
			code, _ := strconv.Unquote(lit.Value)
			m := status.FindStringSubmatch(strings.TrimSpace(v.Doc.Text()))
			if m == nil {
				t.Errorf("api.go: %s's comment does not start with its HTTP status, as \"%s (409): …\"", v.Names[0].Name, v.Names[0].Name)
				continue
			}
			out[code] = m[1]
		}
	}
	return out
}

// TestErrorCodeTableMatchesTheCode: docs/http-api.md's Errors table lists
// every code of this package with the status its comment gives, and no
// other; the control drops a row and changes a status.
func TestErrorCodeTableMatchesTheCode(t *testing.T) {
	code := codeStatuses(t)
	if len(code) < 10 {
		t.Fatalf("found %d codes in api.go: is the reading still right? %v", len(code), code)
	}
	b, err := os.ReadFile(filepath.Join("..", "docs", "http-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, errorsSection, _ := strings.Cut(string(b), "\n## Errors\n")
	errorsSection, _, _ = strings.Cut(errorsSection, "\n## ")
	row := regexp.MustCompile("^\\| (\\d{3}) \\| `([a-z_]+)` \\|")
	doc := map[string]string{}
	for _, line := range strings.Split(errorsSection, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			doc[m[2]] = m[1]
		}
	}
	compare := func(doc map[string]string) []string {
		var p []string
		for _, c := range sortedCodes(code) {
			if s, ok := doc[c]; !ok {
				p = append(p, fmt.Sprintf("docs/http-api.md's Errors table lacks %s (%s)", c, code[c]))
			} else if s != code[c] {
				p = append(p, fmt.Sprintf("docs/http-api.md: %s is %s in the table, %s in api.go", c, s, code[c]))
			}
		}
		for _, c := range sortedCodes(doc) {
			if _, ok := code[c]; !ok {
				p = append(p, fmt.Sprintf("docs/http-api.md: %s is in the Errors table but api.go has no such code", c))
			}
		}
		return p
	}
	for _, p := range compare(doc) {
		t.Error(p)
	}
	broken := map[string]string{}
	for k, v := range doc {
		broken[k] = v
	}
	delete(broken, CodeBroken)
	broken[CodeHeld] = "400"
	p := strings.Join(compare(broken), "\n")
	if !strings.Contains(p, "lacks broken (409)") || !strings.Contains(p, "held is 400 in the table, 409 in api.go") {
		t.Errorf("the control: %q misses the dropped row or the changed status", p)
	}
}

func sortedCodes(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
