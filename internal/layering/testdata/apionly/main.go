// Command apionly is a program of a module of its own that imports seqd's
// wire contract (package api) and nothing else of seqd: it reads one lease
// answer from standard input, as a client in any language would receive it,
// and prints its token, its sequencer and whether its lease id has the wire
// form.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/seqd/seqd/api"
)

func main() {
	var l api.Lease
	dec := json.NewDecoder(os.Stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		fmt.Fprintln(os.Stderr, "apionly:", err)
		os.Exit(1)
	}
	fmt.Println(l.Token, l.Sequencer, api.ValidLeaseID(l.LeaseID), l.Family())
}
