package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// fenceReport is what a run prints: a table, or this as JSON.
type fenceReport struct {
	Run      string       `json:"run"`
	Locks    string       `json:"locks"`
	Write    string       `json:"write"`
	Read     string       `json:"read,omitempty"`
	Delete   string       `json:"delete,omitempty"`
	Cases    []caseResult `json:"cases"`
	Holds    bool         `json:"holds"`
	Duration string       `json:"duration"`
	Seconds  float64      `json:"seconds"`
}

func (k *checker) report(cases []caseResult, took time.Duration) *fenceReport {
	r := &fenceReport{
		Run:      k.id,
		Locks:    k.lockPrefix + "/" + k.id,
		Write:    k.res.write.method + " " + k.res.write.url,
		Cases:    cases,
		Holds:    true,
		Duration: shortDuration(took.Round(time.Millisecond)),
		Seconds:  took.Seconds(),
	}
	if k.res.read.url != "" {
		r.Read = k.res.read.method + " " + k.res.read.url
	}
	if k.res.del.url != "" {
		r.Delete = k.res.del.method + " " + k.res.del.url
	}
	for _, c := range cases {
		if c.Verdict == verdictFails {
			r.Holds = false
		}
	}
	return r
}

func (r *fenceReport) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *fenceReport) writeTable(w io.Writer) error {
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
	_, err := fmt.Fprintln(w, r.summary())
	return err
}

// summary is the last line: which cases hold, fail, or were skipped.
func (r *fenceReport) summary() string {
	by := map[string][]string{}
	for _, c := range r.Cases {
		by[c.Verdict] = append(by[c.Verdict], strconv.Itoa(c.Case))
	}
	var parts []string
	if f := by[verdictFails]; len(f) > 0 {
		parts = append(parts, fmt.Sprintf("FAILS: case %s", strings.Join(f, ", ")))
	}
	parts = append(parts, fmt.Sprintf("%d of %d cases hold", len(by[verdictHolds]), len(r.Cases)))
	if s := by[verdictSkipped]; len(s) > 0 {
		parts = append(parts, fmt.Sprintf("not run: %s", strings.Join(s, ", ")))
	}
	return fmt.Sprintf("%s (%s)", strings.Join(parts, "; "), r.Duration)
}
