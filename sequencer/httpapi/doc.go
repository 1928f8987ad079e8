// Package httpapi serves seqd's HTTP/JSON API over the lease service's
// verbs (the Service interface, which *sequencer.Service implements): how
// a request becomes a call, and an error a status.
//
// NewHandler routes by hand (routes.go holds the table: one row per
// family of leases), checks each /v1/ request's Host, Origin and content
// type before it reads it (guard.go), names the caller with the service's
// Authority and attaches it to the request (auth.go), decodes bodies strictly (decode.go) and status queries
// (query.go), and answers an error with its status and code (errors.go).
// It also serves the status page (ui.go) and the probes.
//
// What a request does, and whether its caller may, is the Service's: the
// handler holds no lease state and decides no policy.
// The wire types are package api's.
package httpapi
