// Package clients holds the tests that run the sidecar's clients for other
// languages (python/, java/, js/) against real daemons. The clients
// themselves are in those directories; this package has no Go API.
package clients
