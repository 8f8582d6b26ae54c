#!/usr/bin/env bash
# Side by side on one mock server: the highest open-loop rate vegeta and `llmtap bench` each
# sustain on this machine. Both send the same small non-streaming chat request at constant
# rates, interleaved step by step (vegeta, then llmtap, at each rate) so that background load
# affects both alike. The achieved rate is the same quantity for both: successful responses per
# second from the first request sent to the last response received (vegeta's "throughput",
# AIPerf's and llmtap's "request_throughput"), so a generator that falls behind and catches
# up late is not credited with the requested rate. A rate is sustained when the achieved rate
# is ≥ 99% of the requested one and ≥ 99% of the requests succeed, and every lower rate was
# sustained too (no collapse). llmtap's schedule lag p99 and CPU use are shown beside it. The
# mock serves with --lean-http (its lean HTTP/1.1 server), so that the upstream both tools share
# takes as little of the machine as it can; MOCK_HTTP=net serves with net/http's server, the
# mock's default. Near the machine's limit one step can go either way, so ROUNDS repeats the
# whole ladder (interleaved again) and the verdict is the median over rounds of each tool's
# highest sustained rate.
#
#   bench/vegeta-compare.sh                       # rates 2000 5000 7500 10000, 5 s each, 1 round
#   RATES="1000 3000" DURATION=3 bench/vegeta-compare.sh
#   MOCK_HTTP=net ROUNDS=5 RATES="5000 6000 7000 8000 9000" DURATION=3 bench/vegeta-compare.sh
#   PIN="taskset -c 0,1" bench/vegeta-compare.sh    # mock and both tools on two cores of a bigger machine
#
# Needs go (or LLMTAP_BIN, a built llmtap) and jq; installs vegeta with `go install` when it is
# missing (or takes VEGETA, a vegeta binary).
set -euo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || echo "$(dirname "$0")/..")"
PIN=${PIN:-}
RATES=${RATES:-"2000 5000 7500 10000"}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-18431}
command -v jq >/dev/null || { echo "jq is required"; exit 1; }

# shellcheck source=bench/vegeta-common.sh
. bench/vegeta-common.sh
start_mock "$PORT"

url="http://127.0.0.1:$PORT"
body='{"model":"mock-model","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4,"stream":false}'
printf '%s' "$body" >"$work/body.json"

echo "machine: $(nproc) cores${PIN:+ (pinned: $PIN)}, load average $(cut -d' ' -f1-3 /proc/loadavg); $DURATION s per step, $ROUNDS round(s), mock server ${MOCK_HTTP:-lean}"
printf '%-8s %8s %10s %8s %9s %12s %s\n' tool rate achieved ratio success lag_p99_ms verdict
# ladder runs the rates once, both tools at each, and sets best_vegeta and best_llmtap: the
# highest rate each sustained with every lower rate sustained too (no collapse).
ladder() {
  best_vegeta=0 v_alive=1
  best_llmtap=0 l_alive=1
  for rate in $RATES; do
    # vegeta: its own report's throughput and success ratio.
    echo "POST $url/v1/chat/completions" |
      $PIN "$VEGETA" attack -rate="$rate/s" -duration="${DURATION}s" -body="$work/body.json" \
        -header "Content-Type: application/json" -timeout=10s >"$work/vegeta.bin"
    "$VEGETA" report -type=json <"$work/vegeta.bin" >"$work/vegeta.json"
    v_rate=$(jq '.throughput' "$work/vegeta.json")
    v_ok=$(jq '.success' "$work/vegeta.json")
    v_ratio=$(jq -n "$v_rate / $rate")
    v_verdict=$(jq -rn "if $v_ratio >= 0.99 and $v_ok >= 0.99 then \"sustained\" else \"not sustained\" end")
    printf '%-8s %8s %10.1f %8.3f %9.3f %12s %s\n' vegeta "$rate" "$v_rate" "$v_ratio" "$v_ok" "-" "$v_verdict"
    if [ "$v_verdict" = sustained ] && [ $v_alive = 1 ]; then best_vegeta=$rate; else v_alive=0; fi

    # llmtap bench: request throughput and the generator's self-check, from its own export.
    dir="$work/llmtap-$rate"
    $PIN "$work/llmtap" bench --url "$url" --model mock-model --streaming=false --request-rate "$rate" \
      --arrival-pattern constant --benchmark-duration "$DURATION" --isl 4 --osl 4 \
      --artifact-dir "$dir" >"$work/llmtap.out" 2>"$work/llmtap.err" || true
    j="$dir/profile_export_aiperf.json"
    if [ -s "$j" ]; then
      l_sent=$(jq '.generator.sent' "$j")
      l_good=$(jq '(.request_count.avg // 0)' "$j")
      l_lag=$(jq '.generator.schedule_lag.p99' "$j")
      l_cpu=$(jq '.generator.cpu_utilization' "$j")
      l_rate=$(jq '(.request_throughput.avg // 0)' "$j")
      l_ratio=$(jq -n "$l_rate / $rate")
      l_ok=$(jq -n "if $l_sent > 0 then $l_good / $l_sent else 0 end")
      l_verdict=$(jq -rn "if $l_ratio >= 0.99 and $l_ok >= 0.99 then \"sustained\" else \"not sustained\" end")
      printf '%-8s %8s %10.1f %8.3f %9.3f %12.3f %s (cpu %.0f%%)\n' llmtap "$rate" "$l_rate" "$l_ratio" "$l_ok" "$l_lag" "$l_verdict" "$(jq -n "$l_cpu*100")"
      if [ "$l_verdict" = sustained ] && [ $l_alive = 1 ]; then best_llmtap=$rate; else l_alive=0; fi
    else
      echo "llmtap   $rate   failed:"; tail -5 "$work/llmtap.err"; l_alive=0
    fi
  done
}

bests_vegeta=() bests_llmtap=()
for round in $(seq "$ROUNDS"); do
  if [ "$ROUNDS" -gt 1 ]; then echo "round $round"; fi
  ladder
  bests_vegeta+=("$best_vegeta") bests_llmtap+=("$best_llmtap")
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo
if [ "$ROUNDS" -gt 1 ]; then
  echo "highest sustained rate per round: vegeta ${bests_vegeta[*]}; llmtap bench ${bests_llmtap[*]}"
  best_vegeta=$(median "${bests_vegeta[@]}") best_llmtap=$(median "${bests_llmtap[@]}")
  echo -n "median over $ROUNDS rounds: "
fi
echo "highest sustained open-loop rate: vegeta $best_vegeta req/s, llmtap bench $best_llmtap req/s (ratio $(jq -n "if $best_vegeta > 0 then $best_llmtap / $best_vegeta * 1000 | round / 1000 else null end"))"
