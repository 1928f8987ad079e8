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

.PHONY: all build deps test vet lint gotest run chaos bench bench-go bench-etcd fmt

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

# The leader-failover and lost-reply tests run in a second pass without the
# race detector: go-zookeeper itself races on its last zxid when a session
# with watches reconnects (zklock/failover_norace_test.go says more). The
# tests that time the daemon against a flood or a frozen ZooKeeper run in a
# pass of their own, one package at a time: they check that a flood of
# connections cannot starve a live lease's renewals and that a freeze is
# answered within a fraction of the session timeout, and on two cores the
# clients' JVMs and databases running beside them starve the daemon
# instead.
ALONE_TESTS := ^(TestBusyFloodKeepsLeasesAlive|TestConnectionFlood|TestBlockingReadDuringFreeze)$$
# The first pass runs TEST_PACKAGES packages at once, not one per core: its
# three longest (chaos, cmd/seqd, clients) spend most of their time waiting
# on ZooKeeper, the daemon and the clients' processes, so with one per core
# half the CPU sat idle (on 2 cores: 601 s with 2 at once, 369 s with 4).
# zklock runs next, on its own: its tests count a session's requests and
# time its monitor, which the other packages' load upsets.
TEST_PACKAGES ?= 4
#
# Each pass goes through scripts/gotest.sh: a package that failed while the
# machine's clocks jumped (a paused machine, a clock set; the test helpers
# record it, see internal/clockstep) runs once more, since a session rightly
# loses its grants across such a jump. Any other failure is final.
GOTEST := GO=$(GO) $(CURDIR)/scripts/gotest.sh
gotest:
	$(GOTEST) -race -count=1 -p $(TEST_PACKAGES) -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -skip '$(ALONE_TESTS)' -- $$($(GO) list ./... | grep -v '/zklock$$')
	$(GOTEST) -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -- ./zklock/
	$(GOTEST) -race -count=1 -p 1 -timeout $(TEST_TIMEOUT) -run '$(ALONE_TESTS)' -- ./cmd/seqd/ ./sequencer/
	$(GOTEST) -count=1 -timeout $(TEST_TIMEOUT) -run 'TestFailoverKeepsTokensRising|TestTLSEnsembleLeaderKill|TestCreateReplyLost|TestMultiMutexReplyLost' -- ./zklock/
	cd $(KUBE) && $(GOTEST) -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -- ./...
	cd $(ETCDBENCH) && $(GOTEST) -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -- ./...

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
