//go:build !race

package main

const lockTestRace = false
