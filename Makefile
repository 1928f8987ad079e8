# seqd: `make run` starts a throwaway ZooKeeper and the daemon on it;
# `make test` runs every check CI runs.
GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
TESTFLAGS   ?=
TEST_TIMEOUT ?= 60m

.PHONY: all build deps test vet lint gotest run chaos bench fmt

all: build

build:
	$(GO) build -o bin/seqd ./cmd/seqd

deps:
	scripts/deps.sh all

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

lint:
	$(GOBIN)/staticcheck ./...

gotest:
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./...

test: deps vet lint gotest

# run builds, then execs the binary: Ctrl-C or a SIGTERM to make stops seqd
# and its ZooKeeper (seqd itself exits 0; make reports the signal).
run: build
	scripts/deps.sh zookeeper
	exec bin/seqd dev

# chaos: the fault-injection suite, minutes long and seeded (SEED=N replays a
# run; CHAOS_DURATION sets the fenced run). Histories and porcupine's
# visualization of failed runs go to CHAOS_OUT.
SEED           ?= 0
CHAOS_DURATION ?= 5m
CHAOS_OUT      ?= chaos-out
chaos: deps
	$(GO) test -count=1 -v -timeout 60m -run 'TestChaos|TestSimulation|TestServiceSimulation' ./chaos/ \
		-args -chaos.seed=$(SEED) -chaos.duration=$(CHAOS_DURATION) -chaos.control=45s \
		-chaos.schedules=50000 -chaos.service-schedules=300 -chaos.out=$(abspath $(CHAOS_OUT))

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
