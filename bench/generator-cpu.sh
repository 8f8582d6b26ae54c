#!/usr/bin/env bash
# CPU per request of the load generators at one fixed open-loop rate, against one mock, runs
# interleaved: vegeta, `llmtap bench`, and optionally another llmtap binary (OLD, e.g. one
# built from an earlier commit). CPU is user + system time of the generator process
# (/usr/bin/time), and of the mock over the same run (/proc/PID/stat, 10 ms ticks); requests =
# RATE × DUR. The mock serves with --lean-http. The two cores are shared by the generator and
# the mock, so the highest rate a generator can sustain is about 2 cores / (its CPU per request
# + the mock's).
#
#   bench/generator-cpu.sh                              # 5,000 req/s, 4 s, 3 rounds
#   OLD=/tmp/llmtap-old RATE=8000 ROUNDS=5 bench/generator-cpu.sh
#
# Needs go (or LLMTAP_BIN), jq and /usr/bin/time; installs vegeta with `go install` when missing.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
RATE=${RATE:-5000} DUR=${DUR:-4} ROUNDS=${ROUNDS:-3} PORT=${PORT:-18432} OLD=${OLD:-}
# shellcheck source=bench/vegeta-common.sh
. bench/vegeta-common.sh
start_mock "$PORT"
NEW=$work/llmtap
printf '%s' '{"model":"mock-model","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4,"stream":false}' >"$work/body.json"
n=$((RATE * DUR))
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $RATE req/s for $DUR s, $ROUNDS rounds"
line() {
  awk -v n="$n" -v tool="$1" -v thr="$4" -v mock="$(($(mock_ticks) - m0))" -v hz="$(getconf CLK_TCK)" \
    '{printf "%-8s %7.1f µs/request (user %s s, sys %s s), mock %5.1f µs/request, achieved %.1f req/s\n", tool, ($1+$2)*1e6/n, $1, $2, mock/hz*1e6/n, thr}' <<<"$2 $3"
}
mock_ticks() { awk '{print $14 + $15}' "/proc/$mock_pid/stat"; }
for _ in $(seq "$ROUNDS"); do
  m0=$(mock_ticks)
  echo "POST http://127.0.0.1:$PORT/v1/chat/completions" |
    /usr/bin/time -o "$work/time" -f "%U %S" "$VEGETA" attack -rate="$RATE/s" -duration="${DUR}s" \
      -body="$work/body.json" -header "Content-Type: application/json" -timeout=10s >"$work/v.bin"
  read -r u s <"$work/time"
  line vegeta "$u" "$s" "$("$VEGETA" report -type=json <"$work/v.bin" | jq .throughput)"
  for v in ${OLD:+old} llmtap; do
    bin=$NEW; [ "$v" = old ] && bin=$OLD
    m0=$(mock_ticks)
    /usr/bin/time -o "$work/time" -f "%U %S" "$bin" bench --url "http://127.0.0.1:$PORT" --model mock-model \
      --streaming=false --request-rate "$RATE" --arrival-pattern constant --benchmark-duration "$DUR" \
      --isl 4 --osl 4 --artifact-dir "$work/out-$v" >/dev/null 2>"$work/$v.err"
    read -r u s <"$work/time"
    line "$v" "$u" "$s" "$(jq .request_throughput.avg "$work/out-$v/profile_export_aiperf.json")"
  done
done
