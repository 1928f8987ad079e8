package zklock

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkShortcuts measures what each shortcut of the package doc saves:
// the same cycles (acquire + release) with the shortcut off against all
// shortcuts on, in rounds that alternate the two so that drift on the
// machine hits them alike. It reports off/on, the time per cycle without
// the shortcut over the time with it (above 1: the shortcut saves time).
// The contenders of a case share one session, as a daemon's do (the
// hand-over shortcut only applies inside a session).
func BenchmarkShortcuts(b *testing.B) {
	servers := shared.Get(b).Servers()
	for _, sc := range []struct {
		name       string
		contenders int
		off        func(*Session, *Mutex)
	}{
		{"stamped-create", 1, func(_ *Session, m *Mutex) { m.stamp = false }},
		{"marker-absence", 1, func(s *Session, _ *Mutex) { s.without.markerProof = true }},
		{"hand-over", 4, func(s *Session, _ *Mutex) { s.without.handOver = true }},
		{"lookEvery", 4, func(s *Session, _ *Mutex) { s.lookEvery = 0 }},
	} {
		b.Run(sc.name, func(b *testing.B) {
			const perRound = 100
			on := shortcutCyclers(b, servers, "on", sc.contenders, nil)
			off := shortcutCyclers(b, servers, "off", sc.contenders, sc.off)
			var tOn, tOff time.Duration
			for range b.N {
				for _, x := range []struct {
					cs []cycler
					t  *time.Duration
				}{{on, &tOn}, {off, &tOff}} {
					d, err := run(x.cs, perRound)
					if err != nil {
						b.Fatal(err)
					}
					*x.t += d
				}
			}
			cycles := float64(b.N * perRound)
			b.ReportMetric(float64(tOn.Nanoseconds())/cycles, "on-ns/cycle")
			b.ReportMetric(float64(tOff.Nanoseconds())/cycles, "off-ns/cycle")
			b.ReportMetric(float64(tOff)/float64(tOn), "off/on")
			b.Logf("%s, %d contender(s): %.0fµs per cycle with it, %.0fµs without: off/on = %.2f",
				sc.name, sc.contenders, float64(tOn.Microseconds())/cycles, float64(tOff.Microseconds())/cycles, float64(tOff)/float64(tOn))
			b.StopTimer()
		})
	}
}

// shortcutCyclers makes n contenders of one lock on one new session, with
// off (if not nil) applied to the session and to each contender's Mutex.
func shortcutCyclers(b *testing.B, servers []string, variant string, n int, off func(*Session, *Mutex)) []cycler {
	b.Helper()
	s := dial(b, servers, Options{})
	name := "shortcuts/" + strings.ReplaceAll(b.Name(), "/", "_") + "-" + variant
	cs := make([]cycler, n)
	for i := range cs {
		m := mutex(b, s, name)
		if off != nil {
			off(s, m)
		}
		cs[i] = &zklockCycler{m: m}
	}
	return cs
}
