//go:build race

package main

// lockTestRace: the tests run with the race detector, and so does the seqd
// binary they build.
const lockTestRace = true
