package zklock

import (
	"testing"
	"time"

	"github.com/seqd/seqd/testenv"
)

// ZooKeeper clamps the session timeout asked for into its
// [minSessionTimeout, maxSessionTimeout]; Timeout must report the clamped
// one, since every loss deadline is computed from it. The test servers
// allow 2 to 600 ticks.
func TestTimeoutIsTheNegotiatedOne(t *testing.T) {
	c := shared.Get(t)
	tick := testenv.DefaultTickTime
	for _, tc := range []struct {
		name      string
		requested time.Duration
		want      time.Duration
	}{
		{"within the range", 4 * time.Second, 4 * time.Second},
		{"above the maximum", 1200 * tick, 600 * tick},
		{"below the minimum", 3 * tick / 2, 2 * tick},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dial(t, c.Servers(), Options{SessionTimeout: tc.requested})
			if got := s.Timeout(); got != tc.want {
				t.Errorf("asked for %v: Timeout = %v, want %v", tc.requested, got, tc.want)
			}
		})
	}
}
