// Package layering holds no code: its test checks the import rules between
// seqd's packages with `go list -deps`, which sees what each package really
// links, build tags and all.
package layering
