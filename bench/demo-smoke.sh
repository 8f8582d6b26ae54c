#!/usr/bin/env bash
# The newcomer's path, checked: build the binary, run `llmtap demo --duration 5s`, and require
# the summary table, non-zero request counts and the files it names, within a minute of the build.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
go build -o bin/llmtap ./cmd/llmtap
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
(cd "$out" && timeout 60 "$OLDPWD/bin/llmtap" demo --duration 5s >"$out/stdout" 2>"$out/stderr") || {
  echo "demo failed:"; cat "$out/stderr" "$out/stdout"; exit 1; }
took=$(( $(date +%s) - start ))
grep -q 'Time to First Token (ms)' "$out/stdout" || { echo "demo printed no table"; cat "$out/stdout"; exit 1; }
count=$(awk '/^Request Count/ {gsub(",", "", $4); print int($4); exit}' "$out/stdout")
[ "${count:-0}" -gt 0 ] || { echo "demo measured no requests"; cat "$out/stdout"; exit 1; }
for f in $(sed -n '/^wrote:/,$p' "$out/stdout" | tail -n +2); do
  [ -s "$out/$f" ] || [ -s "$f" ] || { echo "demo named $f but it is missing or empty"; exit 1; }
done
echo "demo: $count requests measured, table and files written, ${took}s after the build"
