// Package fencedocs holds the test that runs the database examples of
// docs/fencing.md as written, against real servers, and compares what they
// print with the output the document shows.
package fencedocs
