#!/usr/bin/env bash
# Runs every native fuzz target in the repository for the given time (default 5s) each.
# Go runs one fuzz target per invocation, so the targets are listed and run one by one.
set -euo pipefail
t=${1:-5s}
cd "$(git rev-parse --show-toplevel)"
n=0
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "fuzz $pkg $target ($t)"
    # Go's fuzzer can end a clean run with "context deadline exceeded" when the time runs out
    # while it is minimizing a new interesting input (no failing input is reported then); such
    # a run is tried once more. Any run that reports a failing input fails at once.
    for try in 1 2; do
      if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg" >/tmp/fuzz.$$.log 2>&1; then break; fi
      if [ $try = 2 ] || grep -q 'Failing input' /tmp/fuzz.$$.log || ! grep -q 'context deadline exceeded' /tmp/fuzz.$$.log; then
        cat /tmp/fuzz.$$.log; exit 1
      fi
      echo "  (deadline hit while minimizing; trying again)"
    done
    # The fuzzer's last progress line: total executions and the corpus it grew.
    grep -E '^fuzz: elapsed' /tmp/fuzz.$$.log | tail -1 | sed 's/^/  /'
    n=$((n+1))
  done
done
echo "fuzzed $n targets for $t each"
