package fencecheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seqd/seqd/internal/humantime"
)

// Report is what a run prints: a table, or this as JSON.
type Report struct {
	Run      string  `json:"run"`
	Locks    string  `json:"locks"`
	Write    string  `json:"write"`
	Read     string  `json:"read,omitempty"`
	Delete   string  `json:"delete,omitempty"`
	Cases    []Case  `json:"cases"`
	Holds    bool    `json:"holds"`
	Duration string  `json:"duration"`
	Seconds  float64 `json:"seconds"`
}

func (k *checker) report(cases []Case, took time.Duration) *Report {
	r := &Report{
		Run:      k.id,
		Locks:    k.lockPrefix + "/" + k.id,
		Write:    k.res.write.Method + " " + k.res.write.URL,
		Cases:    cases,
		Holds:    true,
		Duration: humantime.Duration(took.Round(time.Millisecond)),
		Seconds:  took.Seconds(),
	}
	if k.res.read.URL != "" {
		r.Read = k.res.read.Method + " " + k.res.read.URL
	}
	if k.res.del.URL != "" {
		r.Delete = k.res.del.Method + " " + k.res.del.URL
	}
	for _, c := range cases {
		if c.Verdict == Fails {
			r.Holds = false
		}
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a table, with the detail of each case
// that fails or was skipped, and the summary line.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "write: %s\n", r.Write)
	if r.Read != "" {
		fmt.Fprintf(w, "read:  %s\n", r.Read)
	}
	if r.Delete != "" {
		fmt.Fprintf(w, "delete: %s\n", r.Delete)
	}
	fmt.Fprintf(w, "locks: %s/c1..c8\n\n", r.Locks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tcheck\texpected\tobserved\tverdict")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.Case, c.Name, c.Expected, c.Observed, c.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, c := range r.Cases {
		if c.Detail != "" {
			fmt.Fprintf(w, "case %d %s: %s\n", c.Case, c.Verdict, c.Detail)
		}
	}
	_, err := fmt.Fprintln(w, r.Summary())
	return err
}

// Summary is the last line of the table: which cases hold, fail, or were skipped.
func (r *Report) Summary() string {
	by := map[string][]string{}
	for _, c := range r.Cases {
		by[c.Verdict] = append(by[c.Verdict], strconv.Itoa(c.Case))
	}
	var parts []string
	if f := by[Fails]; len(f) > 0 {
		parts = append(parts, fmt.Sprintf("FAILS: case %s", strings.Join(f, ", ")))
	}
	parts = append(parts, fmt.Sprintf("%d of %d cases hold", len(by[Holds]), len(r.Cases)))
	if s := by[Skipped]; len(s) > 0 {
		parts = append(parts, fmt.Sprintf("not run: %s", strings.Join(s, ", ")))
	}
	return fmt.Sprintf("%s (%s)", strings.Join(parts, "; "), r.Duration)
}
