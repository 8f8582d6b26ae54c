# Sourced by the scripts that run vegeta beside `llmtap bench` against one mock
# (vegeta-compare.sh, generator-cpu.sh): finds or installs vegeta, makes a work folder removed
# on exit, puts an llmtap binary at $work/llmtap (LLMTAP_BIN, or built from this checkout), and
# start_mock PORT starts the shared mock (zero delays, free prompt counting, lean HTTP/1.1
# server; MOCK_HTTP=net for net/http's server, the mock's default) under $PIN, stopped on exit.
VEGETA=${VEGETA:-$(command -v vegeta || true)}
if [ -z "$VEGETA" ]; then
  VEGETA="$(go env GOPATH)/bin/vegeta"
  [ -x "$VEGETA" ] || go install github.com/tsenart/vegeta/v12@latest
fi
work=$(mktemp -d)
mock_pid=""
cleanup() { [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if [ -n "${LLMTAP_BIN:-}" ]; then cp "$LLMTAP_BIN" "$work/llmtap"; else go build -o "$work/llmtap" ./cmd/llmtap; fi

start_mock() {
  ${PIN:-} "$work/llmtap" mock --listen "127.0.0.1:$1" --ttft 0 --itl 0 --prompt-counter approx $([ "${MOCK_HTTP:-lean}" = net ] || echo --lean-http) 2>"$work/mock.log" &
  mock_pid=$!
  for _ in $(seq 50); do
    if command -v curl >/dev/null; then curl -fs "http://127.0.0.1:$1/health" >/dev/null 2>&1 && return; fi
    sleep 0.1
  done
}
