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

run:
	scripts/deps.sh zookeeper
	$(GO) run ./cmd/seqd dev

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
