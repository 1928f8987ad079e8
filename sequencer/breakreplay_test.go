package sequencer_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
)

// A break names the holder it breaks by token: a captured break request,
// replayed, can break nothing but that holder, which is gone by then. A
// break without a token is refused, or its replay would break the next
// holder.
func TestBreakReplayBreaksNoOtherHolder(t *testing.T) {
	zkc := sharedZK.Get(t)
	d := startDaemon(t, daemonOpts{servers: zkc.Servers(), adminToken: testAdminToken})
	ctx := ctxT(t, time.Minute)
	userc, _ := client.New(d.srv.URL, client.WithoutEnv())
	const name = "replayed"
	first, err := userc.Acquire(ctx, name, client.Owner("first"), client.TTL(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	brk := func(body string) (int, string) {
		t.Helper()
		return httpDoWith(t, "POST", d.srv.URL+"/v1/locks/"+name+"/break", body, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + testAdminToken})
	}
	held := func(want api.Lease) {
		t.Helper()
		st, err := userc.Status(ctx, name)
		if err != nil || !st.Held || st.Token != want.Token || st.Owner != want.Owner {
			t.Fatalf("status %+v %v, want held by %s with token %d", st, err, want.Owner, want.Token)
		}
	}

	if st, body := brk(`{"reason":"stuck"}`); st != http.StatusBadRequest || !strings.Contains(body, "token") {
		t.Fatalf("a break without a token: %d %s, want 400 asking for the holder's token", st, body)
	}
	held(first)

	captured := fmt.Sprintf(`{"reason":"stuck","token":%d}`, first.Token)
	if st, body := brk(captured); st != http.StatusOK {
		t.Fatalf("the break: %d %s", st, body)
	}
	second, err := userc.Acquire(ctx, name, client.Owner("second"), client.TTL(time.Minute), client.Wait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if st, body := brk(captured); st != http.StatusConflict || !strings.Contains(body, api.CodeNotHeld) {
		t.Fatalf("the break replayed: %d %s, want 409 not_held", st, body)
	}
	if st, _ := brk(`{"reason":"stuck"}`); st != http.StatusBadRequest {
		t.Fatalf("a tokenless break replayed: %d, want 400", st)
	}
	held(second)
}
