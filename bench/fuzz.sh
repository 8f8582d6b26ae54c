#!/usr/bin/env bash
# Runs every native fuzz target in the repository for the given time (default 5s) each.
# Go runs one fuzz target per invocation, so the targets are listed and run one by one.
set -euo pipefail
t=${1:-5s}
cd "$(git rev-parse --show-toplevel)"
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $target ($t)"
    # Go's fuzzer can fail a clean timed run with a bare "context deadline exceeded": a race in
    # its coordinator between the -fuzztime deadline and the cancellation of its workers'
    # context, which reports no failing input (golang/go internal/fuzz CoordinateFuzzing;
    # seen on FuzzAddIncludeUsage twice in a row in one .ci/run). Such a run is done
    # again with as many executions as it reported (at least 1000), counted instead of timed:
    # a count sets no deadline to race. Any run that reports a failing input fails at once.
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg" >"$log" 2>&1; then
      if grep -q 'Failing input' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
        cat "$log"; exit 1
      fi
      execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
      execs=$(( ${execs:-0} > 1000 ? ${execs:-0} : 1000 ))
      echo "  (the coordinator's deadline race failed a clean run; again for ${execs} executions)"
      if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "${execs}x" "$pkg" >"$log" 2>&1; then
        cat "$log"; exit 1
      fi
    fi
    # The fuzzer's last progress line: total executions and the corpus it grew.
    grep -E '^fuzz: elapsed' "$log" | tail -1 | sed 's/^/  /'
    n=$((n+1))
  done
done
echo "fuzzed $n targets for $t each"
