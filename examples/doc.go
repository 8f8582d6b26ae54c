// Package examples holds llmtap's example configurations (Caddyfiles, Caddy JSON, an
// OpenTelemetry Collector, Prometheus, Grafana and Kubernetes files) and, in its tests, the
// checks that keep them working: every Caddyfile adapts and validates with the modules the
// llmtap binary ships, the dashboard queries only metrics llmtap registers, and vllm.Caddyfile
// proxies and measures a real stream.
package examples
