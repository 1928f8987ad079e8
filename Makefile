# seqd: `make run` starts a throwaway ZooKeeper and the daemon on it;
# `make test` runs every check CI runs.
GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
TESTFLAGS   ?=
TEST_TIMEOUT ?= 60m
# contrib/kube is a module of its own (client-go stays out of the main
# module's graph): ./... of the main module does not reach it.
KUBE        := contrib/kube
# contrib/etcdbench, etcd's Mutex measured beside seqd bench, is one too
# (etcd's client and gRPC stay out of seqd's graph).
ETCDBENCH   := contrib/etcdbench

.PHONY: all build deps test vet lint gotest test-go test-clients test-contrib tiers-check reruns run chaos bench bench-go bench-etcd fmt

all: build

build:
	$(GO) build -o bin/seqd ./cmd/seqd

deps:
	scripts/deps.sh all

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	cd $(KUBE) && $(GO) vet ./...
	cd $(ETCDBENCH) && $(GO) vet ./...

lint:
	$(GOBIN)/staticcheck ./...
	cd $(KUBE) && $(GOBIN)/staticcheck ./...
	cd $(ETCDBENCH) && $(GOBIN)/staticcheck ./...

# The tests run in three tiers (as hashicorp/raft's test, integ and fuzzy),
# by what they may disturb, each with its own target; `make test` runs the
# three in this order and a failure in one ends the run.
#
# test-go: the Go packages, on the real ZooKeeper servers their tests start,
# with no other runtime beside them: nothing there may be slowed down by a
# JVM, a browser or a database someone else's test started.
# test-clients: the suites that start JVMs, Node, Python, databases or
# Chromium: whole packages (FOREIGN_PKGS), and the tests named in
# FOREIGN_TESTS from packages whose other tests are in test-go.
# test-contrib: the contrib modules, modules of their own.
#
# A test runs in exactly one tier: test-go skips FOREIGN_TESTS and
# test-clients runs them (`make tiers-check` fails when a name there no
# longer names a test of FOREIGN_MIXED, so a rename cannot drop one).
FOREIGN_PKGS  := ./clients/ ./fence/sqlfence/ ./fence/redisfence/ ./fence/internal/fencedocs/ ./deploy/
FOREIGN_MIXED := ./zklock/ ./sequencer/ ./cmd/seqd/ ./chaos/ ./testenv/
# Kazoo (Python) and Curator (JVM) peers in zklock and sequencer; Chromium
# and the docs' shell sessions (chromium, curl, openssl) in cmd/seqd;
# PostgreSQL in chaos; the database servers' own tests in testenv.
FOREIGN_TESTS := TestInteropKazoo|TestInteropCurator|TestInteropDigestAuth|TestInteropElectionKazoo|TestInteropElectionCurator|TestInteropCuratorSemaphore|TestInteropKazooReadWrite|TestInteropCuratorReadWrite|TestInteropKazooMulti|TestACLKeepsKazooOut|TestQueueInOrderAcrossClients|TestDocExamples|TestStatusPageInBrowser|TestWebPageGetsNoLease|TestStatusPageHidesOtherIdentitiesNames|TestChaosPostgres|TestSQLServersKeepCommitsAcrossSIGKILL|TestRedisAppendOnlyKeepsWritesAcrossSIGKILL|TestRedisRestartWaitsUntilLoaded|TestDBUnknownKind
#
# Within test-go, the leader-failover and lost-reply tests run in a last
# pass without the race detector: go-zookeeper itself races on its last
# zxid when a session with watches reconnects
# (zklock/failover_norace_test.go says more). The tests that time the
# daemon against a flood or a frozen ZooKeeper run in a pass of their own,
# one package at a time: they check that a flood of connections cannot
# starve a live lease's renewals and that a freeze is answered within a
# fraction of the session timeout, and on two cores other packages' load
# starves the daemon instead.
ALONE_TESTS := TestBusyFloodKeepsLeasesAlive|TestConnectionFlood|TestBlockingReadDuringFreeze
NORACE_TESTS := TestFailoverKeepsTokensRising|TestTLSEnsembleLeaderKill|TestCreateReplyLost|TestMultiMutexReplyLost
# The first pass runs TEST_PACKAGES packages at once, not one per core: its
# longest (chaos, cmd/seqd) spend most of their time waiting on ZooKeeper
# and the daemon's processes, so with one per core half the CPU sat idle
# (on 2 cores: 601 s with 2 at once, 369 s with 4, measured with the
# clients' suites still in it). zklock runs next, on its own: its tests
# count a session's requests and time its monitor, which the other
# packages' load upsets.
TEST_PACKAGES ?= 4
#
# Each pass goes through scripts/gotest.sh: when a package fails while the
# machine stood still or its clock was set (internal/clockstep records it,
# with the kernel's CPU accounting that tells a paused machine from a
# process starved by load), the failed tests alone run once more, since a
# session rightly loses its grants across such a jump, and the rerun is
# written to RERUN_LEDGER. Any other failure is final. `make test` empties
# the ledger first and prints it at its end.
RERUN_LEDGER ?= $(CURDIR)/test-reruns.log
GOTEST := SEQD_RERUN_LEDGER=$(RERUN_LEDGER) GO=$(GO) $(CURDIR)/scripts/gotest.sh
TESTARGS = -count=1 -timeout $(TEST_TIMEOUT)

test-go: tiers-check
	$(GOTEST) -race $(TESTARGS) -p $(TEST_PACKAGES) -skip '^($(ALONE_TESTS)|$(FOREIGN_TESTS))$$' $(TESTFLAGS) -- \
		$$($(GO) list ./... | grep -vxF "$$($(GO) list $(FOREIGN_PKGS) ./zklock/)")
	$(GOTEST) -race $(TESTARGS) -skip '^($(FOREIGN_TESTS))$$' $(TESTFLAGS) -- ./zklock/
	$(GOTEST) -race $(TESTARGS) -p 1 -run '^($(ALONE_TESTS))$$' $(TESTFLAGS) -- ./cmd/seqd/ ./sequencer/
	$(GOTEST) $(TESTARGS) -run '^($(NORACE_TESTS))$$' $(TESTFLAGS) -- ./zklock/

test-clients: tiers-check
	$(GOTEST) -race $(TESTARGS) -p $(TEST_PACKAGES) $(TESTFLAGS) -- $(FOREIGN_PKGS)
	$(GOTEST) -race $(TESTARGS) -p $(TEST_PACKAGES) -run '^($(FOREIGN_TESTS))$$' $(TESTFLAGS) -- $(FOREIGN_MIXED)

test-contrib:
	cd $(KUBE) && $(GOTEST) -race $(TESTARGS) $(TESTFLAGS) -- ./...
	cd $(ETCDBENCH) && $(GOTEST) -race $(TESTARGS) $(TESTFLAGS) -- ./...

# tiers-check: every name in FOREIGN_TESTS, ALONE_TESTS and NORACE_TESTS
# is a test function of exactly one file of the main module, in a package
# the pass that runs it covers: a test skipped in one pass and run in none
# would be a silent skip.
tiers-check:
	@bad=0; \
	check() { \
		name=$$1 where=$$2; \
		set -- $$(cd $(CURDIR) && git grep -l "^func $$name(t \*testing\.T)" -- '*_test.go' ':!contrib/'); \
		if [ $$# -ne 1 ] || ! echo " $$where " | grep -qF " ./$$(dirname "$$1")/ "; then \
			echo "tiers-check: $$name is a test of $$# files ($$*), want one in $$where"; bad=1; \
		fi; \
	}; \
	for n in $$(echo '$(FOREIGN_TESTS)' | tr '|' ' '); do check $$n '$(FOREIGN_MIXED)'; done; \
	for n in $$(echo '$(ALONE_TESTS)' | tr '|' ' '); do check $$n './cmd/seqd/ ./sequencer/'; done; \
	for n in $$(echo '$(NORACE_TESTS)' | tr '|' ' '); do check $$n './zklock/'; done; \
	exit $$bad

# gotest: the three tiers, as `make test` runs them, without deps, vet and
# lint.
gotest:
	@: >$(RERUN_LEDGER); rc=0; \
	$(MAKE) --no-print-directory test-go test-clients test-contrib || rc=$$?; \
	$(MAKE) --no-print-directory reruns; exit $$rc

# reruns prints the ledger of the last run's reruns.
reruns:
	@if [ -s $(RERUN_LEDGER) ]; then \
		echo "Tests run a second time after a paused machine or a clock step ($(RERUN_LEDGER)):"; cat $(RERUN_LEDGER); \
	else echo "Reruns: none (no test ran a second time)."; fi

test: deps vet lint gotest

# run builds, then execs the binary: Ctrl-C or a SIGTERM to make stops seqd
# and its ZooKeeper (seqd itself exits 0; make reports the signal).
run: build
	scripts/deps.sh zookeeper
	exec bin/seqd dev

# chaos: the fault-injection suite, minutes long and seeded (SEED=N replays a
# run; CHAOS_DURATION sets the fenced run, CHAOS_PARTITION the run under
# network partitions, CHAOS_PG the run with the set in PostgreSQL behind the
# Go fence, CHAOS_KINDS each lease kind's model, CHAOS_CLOCK each model's run
# under clock faults, CHAOS_RESTORE each stretch of load between ZooKeeper's
# recoveries). Histories and porcupine's
# visualization of failed runs go to CHAOS_OUT. Then the multi-lock deadlock
# test runs for 60s (and its one-by-one control for 15s); it ends with the
# fuzzers: the store's recovery, sequencer signatures and the HTTP API's
# strict decoder.
SEED           ?= 0
CHAOS_DURATION ?= 5m
CHAOS_PARTITION ?= 3m
CHAOS_PG       ?= 3m
CHAOS_KINDS    ?= 45s
CHAOS_CLOCK    ?= 45s
CHAOS_RESTORE  ?= 15s
CHAOS_OUT      ?= chaos-out
chaos: deps
	$(GO) test -count=1 -v -timeout 60m -run 'TestChaos|TestPartition|TestSimulation|TestServiceSimulation|TestKinds|TestRestoreUnderLoad' ./chaos/ \
		-args -chaos.seed=$(SEED) -chaos.duration=$(CHAOS_DURATION) -chaos.partition=$(CHAOS_PARTITION) -chaos.control=45s \
		-chaos.pg=$(CHAOS_PG) -chaos.pg-control=20s \
		-chaos.kinds=$(CHAOS_KINDS) -chaos.kinds-control=10s -chaos.clock=$(CHAOS_CLOCK) -chaos.restore=$(CHAOS_RESTORE) \
		-chaos.schedules=50000 -chaos.service-schedules=300 -chaos.out=$(abspath $(CHAOS_OUT))
	$(GO) test -count=1 -v -run 'TestMultiLockNeverDeadlocks|TestMultiLockOneByOneDeadlocks' ./sequencer/ \
		-args -multilock.duration=60s -multilock.control=15s
	$(GO) test -count=1 -v -timeout 30m -run TestPowerLoss ./store/ \
		-args -store.crash-runs=20 -store.crash-ops=200 -store.crash-images=8
	$(GO) test -run '^$$' -fuzz FuzzRecoverKeepsIntactRecords -fuzztime 2m ./store/
	$(GO) test -run '^$$' -fuzz '^FuzzRecoverRefusesSplicedBatches$$' -fuzztime 1m ./store/
	$(GO) test -run '^$$' -fuzz FuzzVerify -fuzztime 1m ./fence/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBody -fuzztime 1m ./sequencer/

# bench: `seqd bench --dev` (about two minutes): lock cycles/s, latency and
# cost per cycle of raw create+delete, go-zookeeper's zk.Lock, zklock and the
# daemon's HTTP API (a separate `seqd serve` process, as deployed) on a
# throwaway ZooKeeper, printed as a table; below it, the HTTP API with the
# daemon inside the bench's process (for profiling). BENCH_FLAGS adds flags
# to both (BENCH_FLAGS='--clients 32 --duration 10s', '--rtt 1ms').
# bench-go runs the Go benchmarks of every package.
BENCH_FLAGS ?=
bench: build
	scripts/deps.sh zookeeper
	bin/seqd bench --dev $(BENCH_FLAGS)
	@printf '\nThe daemon inside the bench'"'"'s own process (for profiling; not as deployed):\n'
	bin/seqd bench --dev $(BENCH_FLAGS) --in-process --cases http

bench-go: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

# bench-etcd: seqd against etcd's concurrency.Mutex on this machine, rounds
# of `seqd bench --dev` and of the same clients on a throwaway etcd
# interleaved (about ten minutes with the defaults). ETCD_FLAGS adds flags
# (ETCD_FLAGS='--clients 16,64,256 --rtt 1ms').
ETCD_FLAGS ?=
bench-etcd: build
	scripts/deps.sh etcd
	cd $(ETCDBENCH) && $(GO) build -o ../../bin/etcdbench .
	bin/etcdbench compare --seqd bin/seqd $(ETCD_FLAGS)

fmt:
	gofmt -w $$(git ls-files '*.go')
