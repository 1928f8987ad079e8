# syntax=docker/dockerfile:1
#
# seqd container image: one static binary that runs as `seqd serve` (the
# daemon, port 7070) or `seqd store` (the fenced demo store, port 7071).
#
#   docker build -t seqd .
#   docker run --rm seqd serve --zk zk1:2181 --listen 0.0.0.0:7070 --api-token-file /run/secrets/seqd_api_token
#
# The final stage is alpine rather than distroless because the HEALTHCHECK
# needs an HTTP client and seqd has no "probe" subcommand: busybox wget (already
# in alpine, no apk install) is the smallest robust choice. The image adds
# about 8 MB to the binary.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that a source change does not refetch modules.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (no cgo, so no libc dependency on alpine's musl), reproducible
# (-trimpath, no VCS stamping: .git is not in the build context).
# COMMIT (e.g. --build-arg COMMIT=$(git rev-parse HEAD)) is what `seqd version`
# reports.
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w -X main.commit=${COMMIT}" -o /out/seqd ./cmd/seqd

FROM alpine:3.20
COPY --from=build /out/seqd /usr/local/bin/seqd
# /data is where `seqd store` keeps its log; a named volume mounted there
# inherits this ownership, so the non-root user can write it.
RUN mkdir -p /data && chown 65532:65532 /data
USER 65532:65532
WORKDIR /data
EXPOSE 7070 7071
# /healthz answers 200 while the process is up (liveness, not readiness: a
# daemon that lost ZooKeeper is healthy but not ready). The store listens on
# 7071: run it with HEALTHCHECK_URL=http://127.0.0.1:7071/healthz (https://
# with TLS; the probe does not check the certificate of its own container).
ENV HEALTHCHECK_URL=http://127.0.0.1:7070/healthz
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD wget -q -T 2 --no-check-certificate -O /dev/null "$HEALTHCHECK_URL" || exit 1
# Exec form: seqd is PID 1 and receives SIGTERM itself, which makes it
# release every lease it holds before exiting.
ENTRYPOINT ["/usr/local/bin/seqd"]
CMD ["serve"]
