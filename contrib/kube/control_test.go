package kube_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	fakecoordination "k8s.io/client-go/kubernetes/typed/coordination/v1/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// put writes value to the store's key "leader" with no term, as a leader of
// client-go's own election does, and returns the status.
func put(t *testing.T, store, value string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, store+"/v1/kv/leader", strings.NewReader(value))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestControlClientGoLeaseLetsTheLateWriteLand is the control of
// TestElectorsLeadOneAtATimeFencedByTerm: the same story on client-go's own
// lock, a Lease record (here in an in-memory API server, client-go's fake
// coordination client), and writes that carry no term. The first leader
// decides to write and freezes (its elector stops renewing, as in a paused
// process); the second takes over once the Lease looks expired and writes;
// the first wakes and finishes its write, which lands over the new leader's.
func TestControlClientGoLeaseLetsTheLateWriteLand(t *testing.T) {
	store := startStore(t, "off")
	fake := &fakecoordination.FakeCoordinationV1{Fake: &k8stesting.Fake{}}
	fake.AddReactor("*", "*", k8stesting.ObjectReaction(k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())))
	elector := func(id string, leading chan<- struct{}) *leaderelection.LeaderElector {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kube-control"},
				Client:     fake,
				LockConfig: resourcelock.ResourceLockConfig{Identity: id},
			},
			LeaseDuration: 2 * time.Second,
			RenewDeadline: 1500 * time.Millisecond,
			RetryPeriod:   200 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(leading) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return le
	}
	run := func(ctx context.Context, le *leaderelection.LeaderElector) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			le.Run(ctx)
		}()
		return done
	}

	aLeads, bLeads := make(chan struct{}), make(chan struct{})
	actx, freeze := context.WithCancel(context.Background())
	aDone := run(actx, elector("a", aLeads))
	waitFor(t, aLeads, "a to lead")
	if got := put(t, store, "from-a"); got != http.StatusOK {
		t.Fatalf("a's write: %d, want 200", got)
	}
	// a decides to write again, and freezes before it sends the write.
	freeze()
	<-aDone

	bctx, stopB := context.WithCancel(context.Background())
	defer stopB()
	bDone := run(bctx, elector("b", bLeads))
	waitFor(t, bLeads, "b to lead once a's Lease looks expired")
	if got := put(t, store, "from-b"); got != http.StatusOK {
		t.Fatalf("b's write: %d, want 200", got)
	}

	// a wakes and sends the write it had decided on: nothing refuses it.
	if got := put(t, store, "late-from-a"); got != http.StatusOK {
		t.Errorf("a's late write: %d; the control expects it to land (200)", got)
	}
	if v, _ := storeValue(t, store); v != "late-from-a" {
		t.Errorf("the store holds %q; the control expects the old leader's late write %q over the new leader's", v, "late-from-a")
	}
	stopB()
	<-bDone
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
	}
}
