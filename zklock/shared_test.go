package zklock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func readLock(t testing.TB, s *Session, name string) *ReadLock {
	t.Helper()
	r, err := NewReadLock(s, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Readers hold together; a writer waits for them and then holds alone; a
// reader that comes after a queued writer waits behind it (a stream of
// readers does not starve the writer). The control: a reader that comes
// while no writer is queued is granted at once beside the others. Tokens
// order writers and readers.
func TestReadLockReadersTogetherWriterAlone(t *testing.T) {
	t.Parallel()
	c := shared.Get(t)
	const name = "rw"
	r1 := readLock(t, dial(t, c.Servers(), Options{}), name)
	r2 := readLock(t, dial(t, c.Servers(), Options{}), name)
	r3 := readLock(t, dial(t, c.Servers(), Options{}), name)
	w := mutex(t, dial(t, c.Servers(), Options{}), name)

	g1, err := r1.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := r2.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("a second reader beside the first: %v", err)
	}
	if _, err := w.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("a writer while readers hold: %v, want ErrHeld", err)
	}
	// The control: no writer queued, a third reader gets in at once.
	g3, err := r3.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("a third reader with no writer queued: %v", err)
	}
	g3.Release(context.Background())

	type result struct {
		g   *Grant
		err error
	}
	wdone := make(chan result, 1)
	go func() {
		g, err := w.Acquire(ctxT(t, 30*time.Second))
		wdone <- result{g, err}
	}()
	waitQueued(t, w, 3)
	if _, err := r3.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("a reader behind a queued writer: %v, want ErrHeld", err)
	}
	rdone := make(chan result, 1)
	go func() {
		g, err := r3.Acquire(ctxT(t, 30*time.Second))
		rdone <- result{g, err}
	}()
	waitQueued(t, w, 4)
	g1.Release(context.Background())
	select {
	case r := <-wdone:
		t.Fatalf("the writer was granted (%v) while a reader still holds", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	g2.Release(context.Background())
	wr := <-wdone
	if wr.err != nil {
		t.Fatal(wr.err)
	}
	if wr.g.Token <= g1.Token || wr.g.Token <= g2.Token {
		t.Fatalf("writer's token %d, want above the readers' %d and %d", wr.g.Token, g1.Token, g2.Token)
	}
	select {
	case r := <-rdone:
		t.Fatalf("the reader behind the writer was granted (%v) while the writer holds", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	wr.g.Release(context.Background())
	rr := <-rdone
	if rr.err != nil {
		t.Fatal(rr.err)
	}
	if rr.g.Token <= wr.g.Token {
		t.Fatalf("reader's token %d, want above the writer's %d", rr.g.Token, wr.g.Token)
	}
	rr.g.Release(context.Background())
}

// kazooRW runs testdata/kazoo_rwlock.py.
func kazooRW(t *testing.T, kind, mode, hosts, path string) *peer {
	t.Helper()
	return startPeer(t, "kazoo "+kind+" "+mode, "", systemPython, "testdata/kazoo_rwlock.py", kind, mode, hosts, path)
}

// kazoo's ReadLock and WriteLock (with extra_lock_patterns for seqd's and
// Curator's names) and ReadLock and Mutex on one path: readers together,
// writers alone, in both directions. Every refusal has its grant beside it
// as the control.
func TestInteropKazooReadWrite(t *testing.T) {
	t.Parallel()
	needKazoo(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	r := readLock(t, s, "interop/kazoo-rw")
	w := mutex(t, s, "interop/kazoo-rw")
	hosts, p := c.ConnectString(), r.Path()
	try := func(kind, want string) {
		t.Helper()
		if got := kazooRW(t, kind, "try", hosts, p).line(t, 30*time.Second); got != want {
			t.Fatalf("kazoo %s try printed %q, want %s", kind, got, want)
		}
	}

	// We read: kazoo reads beside us, cannot write.
	g, err := r.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	try("read", "True")
	try("write", "False")
	g.Release(context.Background())
	// We write: kazoo can do neither.
	g, err = w.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	try("read", "False")
	try("write", "False")
	g.Release(context.Background())
	try("write", "True")

	// kazoo reads: we read beside it, cannot write.
	k := kazooRW(t, "read", "hold", hosts, p)
	if got := k.line(t, 30*time.Second); got != "held" {
		t.Fatalf("kazoo reader printed %q, want held", got)
	}
	g, err = r.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("reading beside kazoo's reader: %v", err)
	}
	g.Release(context.Background())
	if _, err := w.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("writing while kazoo reads: %v, want ErrHeld", err)
	}
	k.say(t, "")
	if got := k.line(t, 30*time.Second); got != "released" {
		t.Fatalf("kazoo printed %q, want released", got)
	}
	// kazoo writes: we can do neither.
	k = kazooRW(t, "write", "hold", hosts, p)
	if got := k.line(t, 30*time.Second); got != "held" {
		t.Fatalf("kazoo writer printed %q, want held", got)
	}
	if _, err := r.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("reading while kazoo writes: %v, want ErrHeld", err)
	}
	if _, err := w.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("writing while kazoo writes: %v, want ErrHeld", err)
	}
	k.say(t, "")
	if got := k.line(t, 30*time.Second); got != "released" {
		t.Fatalf("kazoo printed %q, want released", got)
	}
	g, err = r.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("reading after kazoo's writer released: %v", err)
	}
	g.Release(context.Background())
}

// Curator's InterProcessReadWriteLock and ReadLock on one path: Curator's
// readers read beside ours, its writer excludes ours and ours exclude it.
// (Curator's readers see only writers named __WRIT__: a Mutex, named
// -lock-, does not stop them, so this interop is for seqd's readers.)
func TestInteropCuratorReadWrite(t *testing.T) {
	t.Parallel()
	needCurator(t)
	c := shared.Get(t)
	s := dial(t, c.Servers(), Options{})
	r := readLock(t, s, "interop/curator-rw")
	cur := startPeer(t, "curator read-write", "", "java", "-cp", curatorClasspath, "testdata/CuratorReadWrite.java", c.ConnectString(), r.Path())
	ask := func(line, want string) {
		t.Helper()
		cur.say(t, line)
		if got := cur.line(t, 60*time.Second); got != want {
			t.Fatalf("curator %q printed %q, want %s", line, got, want)
		}
	}

	g, err := r.Acquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ask("write 300", "false") // we read: Curator cannot write
	ask("read 20000", "true") // but reads beside us
	ask("release", "released")
	g.Release(context.Background())
	ask("write 20000", "true") // the control: free, it writes
	if _, err := r.TryAcquire(ctxT(t, 10*time.Second)); !errors.Is(err, ErrHeld) {
		t.Fatalf("reading while Curator writes: %v, want ErrHeld", err)
	}
	ask("release", "released")
	g, err = r.TryAcquire(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("reading after Curator's writer released: %v", err)
	}
	g.Release(context.Background())
}
