#!/usr/bin/env bash
# Ollama v0.6.5 serving the tiny stories260K model on loopback, for llmtap's end-to-end tests.
#
#   bench/ollama.sh --install-only   install ollama v0.6.5 into $(go env GOPATH)/bin unless it is
#                                    there already (cgo: needs gcc and g++; about 3-5 min on 2 cores)
#   bench/ollama.sh start DIR        install if needed, serve on a free 127.0.0.1 port with HOME and
#                                    OLLAMA_MODELS under DIR, create the models stories260k and
#                                    stories260k-1t (one thread, for load tests); prints
#                                    OLLAMA_HOST=127.0.0.1:PORT and writes DIR/pid, DIR/host
#   bench/ollama.sh stop DIR         stop the server started in DIR (by its PID)
#
# The model is the repository's testdata/models/stories260K.gguf (MIT; testdata/README.md), or
# $LLMTAP_MODEL. Nothing is downloaded at run time except the Go module on first install.
set -euo pipefail

version=v0.6.5
bin="$(go env GOPATH)/bin/ollama"

installed() {
  [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -Eq "^[[:space:]]*mod[[:space:]]+github.com/ollama/ollama[[:space:]]+$version[[:space:]]"
}

install() {
  if installed; then return 0; fi
  if ! command -v gcc >/dev/null || ! command -v g++ >/dev/null; then
    echo "ollama.sh: installing gcc/g++ (ollama is built with cgo)" >&2
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq gcc g++ >&2
  fi
  echo "ollama.sh: go install github.com/ollama/ollama@$version (a few minutes, once)" >&2
  start=$(date +%s)
  CGO_ENABLED=1 go install "github.com/ollama/ollama@$version" >&2
  echo "ollama.sh: built in $(( $(date +%s) - start ))s: $bin" >&2
  installed || { echo "ollama.sh: $bin is not ollama $version after go install" >&2; exit 1; }
}

modelfile() {
  if [ -n "${LLMTAP_MODEL:-}" ]; then echo "$LLMTAP_MODEL"; return; fi
  echo "$(cd "$(dirname "$0")/.." && pwd)/testdata/models/stories260K.gguf"
}

# freeport prints a loopback port nothing answers on (bounded tries), below Linux's ephemeral
# range (32768+) so that no client socket of another process holds it. Another process may
# still take it before ollama binds it: start then tries again with another port.
freeport() {
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 12000 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "ollama.sh: no free port found" >&2; exit 1
}

start() {
  dir=$1
  install
  model="$(modelfile)"
  [ -r "$model" ] || { echo "ollama.sh: model not found at $model (set LLMTAP_MODEL)" >&2; exit 1; }
  mkdir -p "$dir/home" "$dir/models"
  export HOME="$dir/home" OLLAMA_MODELS="$dir/models"
  # Four parallel slots whatever memory Ollama finds free (its default is 4 or 1 by memory), and
  # the model kept loaded for the whole run (the default unloads it after 5 idle minutes).
  export OLLAMA_NUM_PARALLEL=4 OLLAMA_KEEP_ALIVE=-1
  for attempt in 1 2 3; do
    host="127.0.0.1:$(freeport)"
    export OLLAMA_HOST="$host"
    # setsid: the server and the runners it spawns form one process group, stopped together.
    setsid "$bin" serve >"$dir/serve.log" 2>&1 </dev/null &
    echo $! >"$dir/pid"
    echo "$host" >"$dir/host"
    for _ in $(seq 1 300); do
      if "$bin" list >/dev/null 2>&1; then break 2; fi  # the CLI asks the server at OLLAMA_HOST; no curl needed
      kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
      sleep 0.1
    done
    if grep -q 'address already in use' "$dir/serve.log" && [ $attempt -lt 3 ]; then
      stop "$dir"; continue
    fi
    echo "ollama.sh: ollama serve did not answer on $host:" >&2; cat "$dir/serve.log" >&2; stop "$dir"; exit 1
  done
  printf 'FROM %s\nPARAMETER num_ctx 512\n' "$(realpath "$model")" >"$dir/Modelfile"
  "$bin" create stories260k -f "$dir/Modelfile" >"$dir/create.log" 2>&1 || {
    echo "ollama.sh: creating the model failed:" >&2; cat "$dir/create.log" >&2; stop "$dir"; exit 1; }
  # stories260k-1t: the same weights on one llama.cpp thread, for load tests. By default Ollama
  # gives llama.cpp one thread per physical core (2 here), and those threads synchronise after
  # every graph op: on 2 cores shared with the test process one preempted thread stalls the
  # other, and 64-token streams/s fell from ~5 to 0 with one busy-looping process beside it.
  # One thread serves ~20 streams/s, 16-21 with two busy loops beside it. (stories260k keeps the
  # default: its 64 tokens take 70-250 ms, which the timing checks of e2e/ollama_test.go need
  # to tell a buffered stream from a stall; on one thread they take ~40 ms.)
  printf 'FROM %s\nPARAMETER num_ctx 512\nPARAMETER num_thread 1\n' "$(realpath "$model")" >"$dir/Modelfile-1t"
  "$bin" create stories260k-1t -f "$dir/Modelfile-1t" >>"$dir/create.log" 2>&1 || {
    echo "ollama.sh: creating the model failed:" >&2; cat "$dir/create.log" >&2; stop "$dir"; exit 1; }
  echo "OLLAMA_HOST=$host"
}

stop() {
  dir=$1
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  # The whole group: ollama serve and its runner subprocesses.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

case "${1:-}" in
  --install-only) install; echo "$bin" ;;
  start) [ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }; start "$2" ;;
  stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; stop "$2" ;;
  *) echo "usage: $0 --install-only | start DIR | stop DIR" >&2; exit 2 ;;
esac
