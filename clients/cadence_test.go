package clients_test

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
)

// Every client renews at the cadence the wire contract states: each
// language's lease names the divisors as constants equal to api's (the Go
// client uses api's own).
func TestRenewCadenceMirrored(t *testing.T) {
	for _, c := range []struct {
		file string
		re   string
		want int
	}{
		{"java/src/main/java/dev/seqd/client/Lease.java", `static final int RENEW_DIVISOR = (\d+);`, api.RenewDivisor},
		{"java/src/main/java/dev/seqd/client/Lease.java", `static final int RETRY_DIVISOR = (\d+);`, api.RetryDivisor},
		{"js/lib/lease.js", `export const RENEW_DIVISOR = (\d+);`, api.RenewDivisor},
		{"js/lib/lease.js", `export const RETRY_DIVISOR = (\d+);`, api.RetryDivisor},
		{"python/seqd/_lease.py", `(?m)^RENEW_DIVISOR = (\d+)$`, api.RenewDivisor},
		{"python/seqd/_lease.py", `(?m)^RETRY_DIVISOR = (\d+)$`, api.RetryDivisor},
	} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(c.re).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no %s: the lease must name the divisor the daemon's api states", c.file, c.re)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != c.want {
			t.Errorf("%s: %s is %d, want api's %d", c.file, c.re, got, c.want)
		}
	}
}

// The control of the cadence vector: the daemon's check refuses a client
// that renewed later than the bound, or never, and passes one in time.
func TestRenewedByCatchesALateClient(t *testing.T) {
	ttl := 6 * time.Second
	for _, c := range []struct {
		renews int
		first  time.Duration
		ok     bool
	}{
		{1, api.RenewInterval(ttl), true},
		{2, ttl / 2, true},
		{1, ttl/2 + time.Millisecond, false}, // renews at half the TTL and a bit
		{1, 2 * ttl / 3, false},
		{0, 0, false},
	} {
		why := renewedBy(&nameStats{Renews: c.renews, firstRenew: c.first}, ttl.Seconds()/2)
		if (why == "") != c.ok {
			t.Errorf("%d renewals, the first after %v: %q, want ok=%v", c.renews, c.first, why, c.ok)
		}
	}
}
