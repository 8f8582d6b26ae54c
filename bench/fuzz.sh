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
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$pkg" >/tmp/fuzz.$$.log 2>&1 || { cat /tmp/fuzz.$$.log; exit 1; }
    n=$((n+1))
  done
done
echo "fuzzed $n targets for $t each"
