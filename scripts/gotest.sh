#!/usr/bin/env bash
# gotest.sh FLAGS... -- PACKAGES...
#
# Runs `go test FLAGS PACKAGES`. If it fails, and while it ran the test
# processes saw the machine's clocks jump (a host that paused the machine,
# a clock that was set, seconds in which no process ran: see
# internal/clockstep), it runs the packages that failed once more, with the
# same flags, and that run's result is the result. A failure with no jump,
# or a second failure, is a failure. The jumps are printed either way.
#
# $GO is the go command (default go).
set -uo pipefail

flags=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	flags+=("$1")
	shift
done
if [ $# -eq 0 ]; then
	echo "usage: gotest.sh FLAGS... -- PACKAGES..." >&2
	exit 64
fi
shift
go=${GO:-go}

steps=$(mktemp)
out=$(mktemp)
trap 'rm -f "$steps" "$out"' EXIT

SEQD_CLOCK_STEPS=$steps "$go" test "${flags[@]}" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ]; then
	exit 0
fi
if [ ! -s "$steps" ]; then
	exit "$rc"
fi
# go test ends a failed package's output with "FAIL<tab>path<tab>time" or
# "FAIL<tab>path [build failed]".
mapfile -t failed < <(awk -F'\t' '$1 == "FAIL" && $2 != "" { split($2, p, " "); print p[1] }' "$out" | sort -u)
echo "gotest.sh: the machine's clocks jumped while the tests ran:"
sed 's/^/  /' "$steps"
if [ ${#failed[@]} -eq 0 ]; then
	exit "$rc"
fi
echo "gotest.sh: a session rightly counts such a jump as silence; running the failed packages once more: ${failed[*]}"
: >"$steps"
SEQD_CLOCK_STEPS=$steps "$go" test "${flags[@]}" "${failed[@]}"
rc=$?
if [ -s "$steps" ]; then
	echo "gotest.sh: the clocks jumped again during the second run:"
	sed 's/^/  /' "$steps"
fi
exit "$rc"
