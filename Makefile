# llmtap — one Makefile; `make help` lists the targets. CI runs `make test`, the same command the
# README gives.

GO        ?= go
BIN       ?= bin/llmtap
FUZZTIME  ?= 5s
BUF_VERSION   := v1.75.0
STATICCHECK_VERSION := v0.8.2
CADDY_VERSION := $(shell sed -n 's/.*"caddy_version": *"\([^"]*\)".*/\1/p' xcaddy.json)

.PHONY: help build xcaddy tools generate generate-check test vet staticcheck fmt-check unit fuzz-smoke demo-smoke soak-smoke soak vulncheck fuzz bench bench-proxy demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build the llmtap binary (Caddy + llmtap modules) into bin/
	$(GO) build -o $(BIN) ./cmd/llmtap

xcaddy: ## build a stock Caddy with the plugin through xcaddy, as plugin users do
	$(GO) run github.com/caddyserver/xcaddy/cmd/xcaddy@v0.4.5 build $(CADDY_VERSION) \
		--with github.com/llmtap/llmtap@v0.0.0=./ --output bin/caddy-llmtap
	bin/caddy-llmtap list-modules | grep llmtap

tools: ## what the end-to-end tests need: Ollama v0.6.5 (go install, cached), the npm openai package, Debian's chromium and prometheus
	@./bench/ollama.sh --install-only
	@./bench/chromium.sh
	@./bench/prometheus.sh
	cd e2e/node && npm ci --no-audit --no-fund

generate: ## regenerate gen/ from proto/ with buf and the protoc-gen-go/connect-go plugins (pinned, via go run)
	$(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) lint
	$(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION) generate

generate-check: generate ## fail when the committed gen/ differs from what `make generate` writes
	@out=$$(git status --porcelain -- gen proto); if [ -n "$$out" ]; then echo "make generate changed (commit the result):"; echo "$$out"; git --no-pager diff --stat -- gen; exit 1; fi

test: tools generate-check vet staticcheck fmt-check unit fuzz-smoke demo-smoke soak-smoke ## everything CI runs: vet, gofmt, race tests, short fuzzing, the demo, the 2-minute soak

vet: ## go vet (the root module and the nested e2e/otlp and e2e/parquet modules)
	$(GO) vet ./...
	cd e2e/otlp && $(GO) vet -mod=mod ./...
	cd e2e/parquet && $(GO) vet -mod=mod ./...

staticcheck: ## staticcheck over every package (pinned, via go run); a deliberate exception carries a //lint:ignore with its reason
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt-check: ## fail when gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The Ollama tests (package e2e) judge shadow load and headroom against a saturation they
# measure on this machine, so they run alone, after the other packages: run beside them, a
# -race build of another package can stall the one-thread model mid-probe (CI, stop 36).
unit: ## all tests with the race detector (the Ollama package e2e alone, last), then the OTLP export test (nested module e2e/otlp: the Collector's receiver) and the Parquet test (nested module e2e/parquet: DuckDB, cgo)
	LLMTAP_ARTIFACTS=$${LLMTAP_ARTIFACTS:-$(CURDIR)/bin/test-artifacts} $(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/e2e$$')
	LLMTAP_ARTIFACTS=$${LLMTAP_ARTIFACTS:-$(CURDIR)/bin/test-artifacts} $(GO) test -race -count=1 -timeout 10m ./e2e/
	cd e2e/otlp && $(GO) test -mod=mod -race -count=1 -timeout 10m ./...
	cd e2e/parquet && CGO_ENABLED=1 $(GO) test -mod=mod -race -count=1 -timeout 20m ./...

fuzz-smoke: ## run every fuzz target for FUZZTIME each
	@./bench/fuzz.sh $(FUZZTIME)

demo-smoke: ## build the binary and run `llmtap demo --duration 5s` as a newcomer would
	@./bench/demo-smoke.sh

soak-smoke: ## 2-minute soak: 1,000 streams through Caddy+llmtap, reloads every 10 s (no -race: see BENCHMARKS.md)
	$(GO) test -count=1 -run '^TestSoak$$' -timeout 10m ./modules/llmtap/ -soak.duration 2m -soak.streams 1000 -soak.reload 10s

soak: ## 30-minute soak, reloads every 30 s (SOAK_REPORT=soak.json keeps the samples)
	$(GO) test -count=1 -run '^TestSoak$$' -timeout 45m -v ./modules/llmtap/ -soak.duration 30m -soak.streams 1000 -soak.reload 30s $(if $(SOAK_REPORT),-soak.report $(abspath $(SOAK_REPORT)))

vulncheck: ## govulncheck over every package (needs vuln.go.dev; not part of `make test`, see SECURITY.md)
	$(GO) run golang.org/x/vuln/cmd/govulncheck@latest ./...

fuzz: ## longer fuzzing (FUZZTIME=10m make fuzz)
	@./bench/fuzz.sh $(FUZZTIME)

bench: ## micro-benchmarks of the hot paths (figures go to BENCHMARKS.md)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./telemetry/... ./load/... ./mirror/... ./mock/... ./format/...

bench-proxy: ## proxy overhead: plain Caddy vs Caddy with llmtap on loopback (PROFILE=1 adds pprof)
	@./bench/proxy.sh $(ARGS)

demo: ## the two-minute tour: mock server, Caddy with llmtap, load, a summary table
	$(GO) run ./cmd/llmtap demo

clean: ## remove build outputs
	rm -rf bin
