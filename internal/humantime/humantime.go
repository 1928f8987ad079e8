// Package humantime writes a duration as people do: 10m and 1h, not
// 10m0s and 1h0m0s. It links the standard library only, so that both the
// command line and the conformance cases a resource's own test imports
// (fencecheck) print durations the same way. It parses nothing: flags
// and the wire take Go duration strings.
package humantime

import (
	"strings"
	"time"
)

// Duration is d without trailing zero units.
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
