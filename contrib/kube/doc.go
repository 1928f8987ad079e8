// Package kube runs client-go's leader election on a seqd election, so that
// a Kubernetes controller's leader holds a fencing token.
//
// client-go's own locks (a Lease object in the API server) decide who
// leads by timers on each candidate's clock, and client-go says plainly that
// they do "not guarantee that only one client is acting as a leader": a
// leader that pauses past its lease goes on writing while another one leads.
// A [Lock] is a resourcelock.Interface whose record is a seqd election: the
// leader is whoever the daemon says leads, and each leadership has a term
// that is higher than every term before it. Send the term with every write
// ([Transport] stamps it on HTTP requests) and let the resource refuse a
// term below the highest it has seen: a paused leader's late write is then
// refused, whatever client-go's timers believe.
//
//	lock, err := kube.New(kube.Config{Election: "my-controller", Identity: podName})
//	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
//		Lock:            lock,
//		LeaseDuration:   15 * time.Second, // the seqd lease's TTL too (Config.TTL)
//		RenewDeadline:   10 * time.Second,
//		RetryPeriod:     2 * time.Second,
//		ReleaseOnCancel: true,
//		Callbacks: lock.Callbacks(leaderelection.LeaderCallbacks{
//			OnStartedLeading: func(ctx context.Context) {
//				term, _ := kube.TermFrom(ctx) // ctx ends when the seqd lease ends
//				...
//			},
//			OnStoppedLeading: func() { ... },
//		}),
//	})
//
// The leadership ends when the seqd lease ends: the context that
// [Lock.Callbacks] gives OnStartedLeading is cancelled as soon as the daemon
// refuses a renewal (the lease was lost, broken by an operator, taken over)
// or no renewal was confirmed within the TTL, not only once client-go's
// RenewDeadline has passed. The elector's own renewals (every RetryPeriod)
// renew the seqd lease; keep RetryPeriod well below the TTL.
//
// The package talks to the daemon through package client and reads the same
// settings: SEQD_ADDR, SEQD_API_TOKEN_FILE, SEQD_CACERT, SEQD_CERT and
// SEQD_KEY. It needs no access to the Kubernetes API: no Lease objects, no
// RBAC for them.
//
// It is a Go module of its own (github.com/seqd/seqd/contrib/kube), so that
// client-go stays out of the dependency graph of seqd's main module.
package kube
