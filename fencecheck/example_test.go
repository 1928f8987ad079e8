package fencecheck_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/fencecheck"
)

// A Go test of a resource runs the cases against it with grants from a
// daemon (here the test's own, at daemonAddr; a sidecar's is in SEQD_ADDR).
// The resource takes the token in a header; Restart, if given, restarts it
// for case 6.
func ExampleRun() {
	c, err := client.New(daemonAddr)
	if err != nil {
		log.Fatal(err)
	}
	res := &kv{}
	res.fence, res.vals = newFence(), map[string]string{}
	if err := res.start(); err != nil {
		log.Fatal(err)
	}
	defer res.srv.Close()

	rep, err := fencecheck.Run(context.Background(), fencecheck.Config{
		Write:       fencecheck.Request{Method: "PUT", URL: "http://" + res.addr + "/kv/{key}", Body: "{value}"},
		Read:        fencecheck.Request{Method: "GET", URL: "http://" + res.addr + "/kv/{key}"},
		TokenHeader: "Fencing-Token",
		Grants:      fencecheck.Daemon(c),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range rep.Cases {
		fmt.Printf("%d %s: %s\n", k.Case, k.Name, k.Verdict)
	}
	if !rep.Holds {
		rep.WriteTable(os.Stdout)
	}
	// Output:
	// 1 holder writes: holds
	// 2 holder writes again, same token: holds
	// 3 new holder writes, then old holder: holds
	// 4 old holder reads; write after newer read: holds
	// 5 5 holders in turn, late writes racing: holds
	// 6 restart, then old holder writes: skipped
	// 7 tokens compared as integers: holds
	// 8 deletes fenced, max kept: skipped
}
