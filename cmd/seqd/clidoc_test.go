package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

var updateCLIDoc = flag.Bool("update-cli-doc", false, "rewrite the reference at the end of docs/cli.md from the commands' flags")

// The reference of every command and flag at the end of docs/cli.md, made
// from the commands themselves: the part between these markers.
const (
	cliDocBegin = "<!-- reference: made by go test ./cmd/seqd -run TestCLIDocCoversEveryFlag -update-cli-doc -->"
	cliDocEnd   = "<!-- end of reference -->"
)

// cliReference is a table of flags per command, as --help has them.
func cliReference(app *cli.App) string {
	var b strings.Builder
	b.WriteString(cliDocBegin + "\n\n## Reference: every command and flag\n\n")
	b.WriteString("Made from the commands' own definitions (what `seqd COMMAND --help` prints), so it is never behind\nthem. Every flag also reads the environment variable in its row.\n")
	for _, c := range app.Commands {
		fmt.Fprintf(&b, "\n### seqd %s\n\n%s.", c.Name, strings.TrimSuffix(c.Usage, "."))
		if c.ArgsUsage != "" && strings.TrimSpace(c.ArgsUsage) != "" {
			fmt.Fprintf(&b, " Arguments: `%s`.", strings.TrimSpace(c.ArgsUsage))
		}
		b.WriteString("\n")
		if len(c.Flags) == 0 {
			b.WriteString("\nNo flags.\n")
			continue
		}
		b.WriteString("\n| flag | env var | default | what |\n|---|---|---|---|\n")
		for _, f := range c.Flags {
			name, env, def, usage := flagRow(f)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, env, def, strings.ReplaceAll(usage, "|", "\\|"))
		}
	}
	b.WriteString("\n" + cliDocEnd + "\n")
	return b.String()
}

// flagRow is a flag's spelling, env var, default and usage, for the table.
func flagRow(f cli.Flag) (name, env, def, usage string) {
	var names []string
	for _, n := range f.Names() {
		if len(n) == 1 {
			names = append(names, "`-"+n+"`")
		} else {
			names = append(names, "`--"+n+"`")
		}
	}
	name = strings.Join(names, ", ")
	if ef, ok := f.(interface{ GetEnvVars() []string }); ok && len(ef.GetEnvVars()) > 0 {
		env = "`" + strings.Join(ef.GetEnvVars(), "`, `") + "`"
	}
	if df, ok := f.(interface{ GetDefaultText() string }); ok {
		if d := df.GetDefaultText(); d != "" && d != `""` && d != "false" && d != "0" && d != "0s" {
			def = "`" + strings.Trim(d, `"`) + "`"
		}
	}
	if uf, ok := f.(interface{ GetUsage() string }); ok {
		usage = strings.ReplaceAll(uf.GetUsage(), "`", "")
	}
	return name, env, def, usage
}

// TestCLIDocCoversEveryFlag: docs/cli.md ends with a reference of every
// command and every flag, equal to what the commands define; a flag added
// without it fails here (run with -update-cli-doc to rewrite it). The
// prose above the reference must name every command too.
func TestCLIDocCoversEveryFlag(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "cli.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	want := cliReference(app)
	begin, end := bytes.Index(doc, []byte(cliDocBegin)), bytes.Index(doc, []byte(cliDocEnd))
	if begin < 0 || end < begin {
		if !*updateCLIDoc {
			t.Fatalf("%s has no reference between %q and %q: run with -update-cli-doc", path, cliDocBegin, cliDocEnd)
		}
		begin, end = len(doc), len(doc)
		doc = append(doc, '\n')
	} else {
		end += len(cliDocEnd) + 1
	}
	if got := string(doc[begin:min(end, len(doc))]); got != want {
		if *updateCLIDoc {
			out := append(append(append([]byte{}, doc[:begin]...), want...), doc[min(end, len(doc)):]...)
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the reference in %s is not what the commands define: run go test ./cmd/seqd -run TestCLIDocCoversEveryFlag -update-cli-doc and read the diff", path)
	}
	prose := string(doc[:begin])
	for _, c := range app.Commands {
		if !strings.Contains(prose, "seqd "+c.Name) {
			t.Errorf("%s does not describe seqd %s above the reference", path, c.Name)
		}
	}
}
