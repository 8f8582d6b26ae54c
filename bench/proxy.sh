#!/usr/bin/env bash
# Proxy overhead benchmark (BENCHMARKS.md, "Proxy overhead"): builds bin/llmtap and the bench,
# then runs bench/proxybench, which starts the mock servers and one proxy process per variant
# (plain Caddy, Caddy with llmtap) on loopback and measures them interleaved. Arguments go to
# proxybench (`bench/proxy.sh -h` lists them); the report is printed and written to
# bin/proxybench-out/proxy.md. PROFILE=1 also takes CPU and allocation profiles of each proxy into
# bin/proxybench-out/profiles/ and prints their top entries. BASE=<git revision> also builds that
# revision into bin/llmtap-base and passes it as -base-bin, so a change is measured against its
# base in one interleaved run: `BASE=main bench/proxy.sh -variants caddy,llmtap,llmtap@base`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
go build -o bin/llmtap ./cmd/llmtap
go build -o bin/proxybench ./bench/proxybench
mkdir -p bin/proxybench-out
args=(-out bin/proxybench-out/proxy.md)
if [ -n "${BASE:-}" ]; then
  wt=$(mktemp -d)
  git worktree add --detach "$wt" "$BASE" >/dev/null
  (cd "$wt" && go build -o "$OLDPWD/bin/llmtap-base" ./cmd/llmtap)
  git worktree remove --force "$wt"
  args+=(-base-bin bin/llmtap-base)
fi
if [ "${PROFILE:-0}" = 1 ]; then
  rm -rf bin/proxybench-out/profiles
  args+=(-profile bin/proxybench-out/profiles)
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2
bin/proxybench "${args[@]}" "$@"
if [ "${PROFILE:-0}" = 1 ]; then
  for v in caddy llmtap; do
    [ -f "bin/proxybench-out/profiles/$v-cpu.pb.gz" ] || continue
    echo "== $v: CPU, top by cumulative time"
    go tool pprof -top -cum -nodecount 40 bin/llmtap "bin/proxybench-out/profiles/$v-cpu.pb.gz" 2>/dev/null | sed -n '6,50p'
    echo "== $v: objects allocated under the profiled load"
    go tool pprof -sample_index=alloc_objects -top -nodecount 20 \
      -base "bin/proxybench-out/profiles/$v-allocs-before.pb.gz" bin/llmtap "bin/proxybench-out/profiles/$v-allocs.pb.gz" 2>/dev/null | sed -n '6,30p'
  done
fi
