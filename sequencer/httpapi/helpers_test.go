package httpapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/fence"
	"github.com/seqd/seqd/internal/httptry"
	"github.com/seqd/seqd/sequencer/policy"
)

// The handler's own tests run on fakeService: no ZooKeeper, no lease
// logic. What a request does to real leases is tested end to end on a
// daemon (sequencer/e2e and the package sequencer's tests).

// fakeService is a Service that records the verbs it was asked and
// answers each with err (nil: a zero answer). Its Authority is auth.
type fakeService struct {
	auth *policy.Authority
	err  error

	mu    sync.Mutex
	verbs []string
	// callers are the callers the verbs saw, as the handler attached them.
	callers []policy.Caller
}

func (f *fakeService) called(ctx context.Context, verb string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verbs = append(f.verbs, verb)
	f.callers = append(f.callers, policy.CallerOf(ctx))
	return f.err
}

// asked are the verbs called so far.
func (f *fakeService) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.verbs...)
}

// lastCaller is the caller of the last verb called.
func (f *fakeService) lastCaller() policy.Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.callers) == 0 {
		return policy.Caller{}
	}
	return f.callers[len(f.callers)-1]
}

func (f *fakeService) Authority() *policy.Authority { return f.auth }
func (f *fakeService) Ready() bool                  { return f.err == nil }

func (f *fakeService) Acquire(ctx context.Context, name string, req api.AcquireRequest) (api.Lease, error) {
	return api.Lease{Name: name, Owner: req.Owner, Token: 1}, f.called(ctx, "Acquire")
}
func (f *fakeService) AcquireSemaphore(ctx context.Context, name string, req api.SemaphoreAcquireRequest) (api.Lease, error) {
	return api.Lease{Name: name}, f.called(ctx, "AcquireSemaphore")
}
func (f *fakeService) Campaign(ctx context.Context, name string, req api.CampaignRequest) (api.Lease, error) {
	return api.Lease{Name: name}, f.called(ctx, "Campaign")
}
func (f *fakeService) AcquireMulti(ctx context.Context, req api.MultiAcquireRequest) (api.MultiLease, error) {
	return api.MultiLease{}, f.called(ctx, "AcquireMulti")
}
func (f *fakeService) Renew(ctx context.Context, _ api.Family, name string, req api.LeaseRequest) (api.Lease, error) {
	return api.Lease{Name: name}, f.called(ctx, "Renew")
}
func (f *fakeService) RenewMany(ctx context.Context, req api.RenewManyRequest) ([]api.Lease, []error, error) {
	return make([]api.Lease, len(req.Leases)), make([]error, len(req.Leases)), f.called(ctx, "RenewMany")
}
func (f *fakeService) RenewMulti(ctx context.Context, req api.MultiLeaseRequest) (api.MultiLease, error) {
	return api.MultiLease{}, f.called(ctx, "RenewMulti")
}
func (f *fakeService) Release(ctx context.Context, _ api.Family, _ string, _ api.LeaseRequest) error {
	return f.called(ctx, "Release")
}
func (f *fakeService) ReleaseMulti(ctx context.Context, _ api.MultiLeaseRequest) (api.ReleaseResponse, error) {
	return api.ReleaseResponse{Released: true}, f.called(ctx, "ReleaseMulti")
}
func (f *fakeService) Proclaim(ctx context.Context, name string, _ api.ProclaimRequest) (api.Lease, error) {
	return api.Lease{Name: name}, f.called(ctx, "Proclaim")
}
func (f *fakeService) Break(ctx context.Context, _ api.Family, _ string, _ api.BreakRequest, _ string) (api.BreakResponse, error) {
	return api.BreakResponse{}, f.called(ctx, "Break")
}
func (f *fakeService) ParseSequencer(seq string) (fence.Sequencer, error) {
	return fence.ParseSequencer(seq)
}
func (f *fakeService) Check(ctx context.Context, seq fence.Sequencer) (uint64, error) {
	return seq.Token, f.called(ctx, "Check")
}
func (f *fakeService) Status(ctx context.Context, name string) (api.LockStatus, error) {
	return api.LockStatus{Name: name}, f.called(ctx, "Status")
}
func (f *fakeService) SemaphoreStatus(ctx context.Context, name string) (api.SemaphoreStatus, error) {
	return api.SemaphoreStatus{Name: name}, f.called(ctx, "SemaphoreStatus")
}
func (f *fakeService) ElectionStatus(ctx context.Context, name string) (api.ElectionStatus, error) {
	return api.ElectionStatus{Name: name}, f.called(ctx, "ElectionStatus")
}
func (f *fakeService) WaitLock(ctx context.Context, name string, _ uint64, _ time.Duration) (api.LockStatus, error) {
	return api.LockStatus{Name: name}, f.called(ctx, "WaitLock")
}
func (f *fakeService) WaitSemaphore(ctx context.Context, name string, _ uint64, _ time.Duration) (api.SemaphoreStatus, error) {
	return api.SemaphoreStatus{Name: name}, f.called(ctx, "WaitSemaphore")
}
func (f *fakeService) WaitElection(ctx context.Context, name string, _ uint64, _ time.Duration) (api.ElectionStatus, error) {
	return api.ElectionStatus{Name: name}, f.called(ctx, "WaitElection")
}
func (f *fakeService) SafeFor(ctx context.Context, _ api.Family, _, _ string) (time.Duration, bool) {
	f.called(ctx, "SafeFor")
	return 0, false
}
func (f *fakeService) MultiLockStatus(ctx context.Context, _ string, _ bool, _ uint64, _ time.Duration) (api.MultiLockStatus, error) {
	return api.MultiLockStatus{}, f.called(ctx, "MultiLockStatus")
}
func (f *fakeService) Leases(ctx context.Context, _ api.Family) []api.Lease {
	f.called(ctx, "Leases")
	return nil
}
func (f *fakeService) MultiLeases(ctx context.Context) []api.MultiLease {
	f.called(ctx, "MultiLeases")
	return nil
}
func (f *fakeService) Overview(ctx context.Context, _ api.Family, _ bool, _ uint64, _ time.Duration) (api.Overview, error) {
	return api.Overview{}, f.called(ctx, "Overview")
}

var _ Service = (*fakeService)(nil)

// discard is a logger that keeps nothing.
var discard = slog.New(slog.DiscardHandler)

func jsonNum(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// httpDoWith is httpDo with headers ("Host" sets the request's Host).
func httpDoWith(t testing.TB, method, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	return httptry.Do(t, method, url, body, headers)
}

// serve is the URL of a test server of a handler over svc with opts.
func serve(tb testing.TB, svc Service, opts HandlerOptions) string {
	srv := httptest.NewServer(NewHandler(svc, opts))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// certState is a TLS connection state whose verified client certificate
// is named cn.
func certState(cn string) *tls.ConnectionState {
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}}}
}
