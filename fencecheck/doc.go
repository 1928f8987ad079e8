// Package fencecheck runs the conformance cases of a fenced resource: with
// the tokens of real grants, it writes (and reads, and deletes) keys of an
// HTTP resource and checks that the resource admits the holder's writes,
// refuses older holders' writes, reads and deletes, keeps its max across a
// restart, and compares tokens as unsigned 64-bit integers (across a power
// of ten, above 2^53 and 2^63).
//
// It is what `seqd fence-check` runs, and a Go test can run it against its
// own resource: describe the resource's requests in a Config, give it a
// Grantor (Daemon, over the daemon's client), and call Run. The Report says
// which cases hold; Report.Holds is false when one fails.
//
// Every run names its locks, keys, owners and values with a random run id,
// so that runs at the same time or one after another never meet. The
// package links the standard library, api and client only.
package fencecheck
