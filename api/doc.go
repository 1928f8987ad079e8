// Package api is the wire contract of seqd's HTTP API: every request and
// answer body, the families of leases, the limits, the error codes and the
// errors they match, and the formats of lease ids and tokens. The daemon
// (package sequencer) and the Go client (package client) both import it,
// so the contract has one definition; the clients in other languages
// mirror its names.
//
// It depends on the standard library and package fence only: a program
// that speaks the API, or checks what it was sent, links nothing of the
// daemon.
package api
