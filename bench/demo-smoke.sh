#!/usr/bin/env bash
# The newcomer's path, checked: build the binary, run `llmtap demo --duration 5s`, and require
# the summary table, non-zero request counts and the files it names, within a minute of the build;
# then `llmtap report` of the demo's folder (HTML and PNG charts).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
go build -o bin/llmtap ./cmd/llmtap
# The binary says what it is: llmtap's help leads with its own commands, its version names the
# Caddy it embeds.
bin/llmtap | head -8 | grep -q "llmtap's commands:" || { echo "llmtap without arguments does not lead with its commands:"; bin/llmtap | head -12; exit 1; }
bin/llmtap version | grep -Eq '^llmtap .*, Caddy v2\.11\.' || { echo "llmtap version: $(bin/llmtap version)"; exit 1; }
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
# The report of the demo's run: one HTML file and a PNG per chart.
run=$(dirname "$(sed -n '/^wrote:/,$p' "$out/stdout" | grep 'records.jsonl' | head -1 | tr -d ' ')")
(cd "$out" && "$OLDPWD/bin/llmtap" report "$run" -o report.html --png png >"$out/report.out" 2>&1) || {
  echo "llmtap report of the demo failed:"; cat "$out/report.out"; exit 1; }
[ -s "$out/report.html" ] && [ "$(ls "$out/png" | wc -l)" -ge 10 ] || {
  echo "llmtap report wrote no report or too few charts"; cat "$out/report.out"; ls "$out" "$out/png"; exit 1; }
echo "demo: $count requests measured, table and files written, ${took}s after the build; report with $(ls "$out/png" | wc -l) charts"
