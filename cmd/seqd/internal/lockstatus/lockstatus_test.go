package lockstatus

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
)

// The table has the head line, the holders then the waiters in order,
// numbered on, with anybody's text escaped, and says how many contenders
// were not read.
func TestWriteTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	exp := now.Add(9800 * time.Millisecond)
	s := Status{
		Head: "lock jobs/a: held, token 7",
		Holding: []api.Contender{
			{Token: 7, Owner: "web-1\x1b[2A", Command: "backup", Mode: "exclusive", Since: now.Add(-time.Minute), ExpiresAt: &exp},
		},
		Queue:  []api.Contender{{Owner: "web-2", Since: now.Add(-2 * time.Second)}},
		Unread: 3,
	}
	var b bytes.Buffer
	if err := s.WriteTable(&b, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d lines, want 5:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"lock jobs/a: held, token 7"},
		{"#", "ROLE", "TOKEN", "OWNER"},
		{"1", "holder", "7", `web-1\x1b[2A (backup)`, "exclusive", "(1m0s ago)", "in 9.8s"},
		{"2", "waiting", "-", "web-2", "(2s ago)"},
		{"and 3 more contenders, not read"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i], w)
			}
		}
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Errorf("the table holds a raw escape: %q", b.String())
	}
	b.Reset()
	if err := (Status{Head: "lock jobs/b: free"}).WriteTable(&b, now); err != nil || b.String() != "lock jobs/b: free\nno contenders\n" {
		t.Errorf("a free lock's table = %q (%v)", b.String(), err)
	}
}

// sameLeader tells a change of term or value from the same leader read
// again, and no leader from one.
func TestSameLeader(t *testing.T) {
	a := &api.LeaderView{Term: 3, Value: "x"}
	for _, tc := range []struct {
		a, b *api.LeaderView
		want bool
	}{
		{a, &api.LeaderView{Term: 3, Value: "x"}, true},
		{a, &api.LeaderView{Term: 4, Value: "x"}, false},
		{a, &api.LeaderView{Term: 3, Value: "y"}, false},
		{a, nil, false},
		{nil, nil, true},
	} {
		if got := sameLeader(tc.a, tc.b); got != tc.want {
			t.Errorf("sameLeader(%+v, %+v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
