#!/usr/bin/env bash
# gotest.sh FLAGS... -- PACKAGES...
#
# Runs `go test FLAGS PACKAGES`. If it fails, and while it ran the machine
# stood still or its clock was set (a host that paused the machine, a clock
# set by hand or NTP: internal/clockstep records each jump of the clocks
# with the kernel's CPU accounting over it, and its verdict), the tests that
# failed run once more, each package's alone (-run '^(TestA|TestB)$', the
# other flags the same), and that run's result is the result. Each such
# rerun is appended to the ledger $SEQD_RERUN_LEDGER names, if it names one:
# the package, the tests, the evidence, the outcome.
#
# A failure with no jump, or only with jumps whose verdict is "starved" (the
# process did not run while the machine's CPUs ran other work: a failure
# under load) or "unknown", is final; so is a package that failed without
# naming a failed test (a build failure, a timeout), and a second failure.
# The jumps are printed either way.
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
ledger=${SEQD_RERUN_LEDGER:-}

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
echo "gotest.sh: the test processes saw the clocks jump while they ran:"
sed 's/^/  /' "$steps"
if ! grep -Eq '^clockstep: pid [0-9]+: (pause|clock step):' "$steps"; then
	echo "gotest.sh: no rerun: no jump was a paused machine or a clock step (a starved process failed under load)"
	exit "$rc"
fi

# go test prints each package's output whole, a failed top-level test as
# "--- FAIL: TestX (0.10s)" at the start of a line (subtests are indented),
# and ends a failed package with "FAIL<tab>path<tab>time" or "FAIL<tab>path
# [build failed]". Each line out: the path, then its failed tests.
mapfile -t failed < <(awk -F'\t' '
	/^--- FAIL: / { split($0, w, " "); tests = tests " " w[3]; next }
	/^ok  \t/ { tests = ""; next }
	$1 == "FAIL" && $2 != "" { split($2, p, " "); print p[1] tests; tests = "" }
' "$out")
if [ ${#failed[@]} -eq 0 ]; then
	exit "$rc"
fi

# The flags without -run, whose place the failed tests take.
rerun_flags=()
skip_next=0
for f in "${flags[@]}"; do
	if [ "$skip_next" -eq 1 ]; then
		skip_next=0
		continue
	fi
	case $f in
	-run | --run | -test.run) skip_next=1 ;;
	-run=* | --run=* | -test.run=*) ;;
	*) rerun_flags+=("$f") ;;
	esac
done

evidence=$(grep -E '^clockstep: pid [0-9]+: ' "$steps")
rc=0
for line in "${failed[@]}"; do
	read -r pkg tests <<<"$line"
	if [ -z "$tests" ]; then
		echo "gotest.sh: no rerun of $pkg: it failed without a failed test to name (a build failure, a timeout, its TestMain)"
		rc=1
		continue
	fi
	pattern="^($(tr ' ' '|' <<<"$tests"))\$"
	echo "gotest.sh: a session rightly counts a paused machine or a clock step as silence; running once more in $pkg: $tests"
	: >"$steps"
	SEQD_CLOCK_STEPS=$steps "$go" test "${rerun_flags[@]}" -run "$pattern" "$pkg"
	prc=$?
	outcome=passed
	if [ "$prc" -ne 0 ]; then
		outcome="failed again"
		rc=$prc
	fi
	if [ -s "$steps" ]; then
		echo "gotest.sh: the clocks jumped again during the second run:"
		sed 's/^/  /' "$steps"
	fi
	if [ -n "$ledger" ]; then
		{
			printf '%s %s %s: ran again, %s\n' "$(date -u '+%Y-%m-%d %H:%M:%S')" "$pkg" "$tests" "$outcome"
			sed 's/^/  why: /' <<<"$evidence"
			if [ -s "$steps" ]; then sed 's/^/  during the rerun: /' "$steps"; fi
		} >>"$ledger"
	fi
done
exit "$rc"
