// Package scrape reads Prometheus text exposition pages over HTTP, so that
// llmtap can take GPU and inference-server readings without cgo: a
// dcgm-exporter endpoint stands in for NVML ([DCGMSource] implements the
// telemetry/gpu Source interface), and an inference server's own /metrics
// page is normalized into one [ServerMetrics] whatever its dialect (vLLM,
// SGLang or TGI).
//
// Pages are parsed with the official parser from
// github.com/prometheus/common/expfmt. Every fetch is bounded: a timeout
// covers the whole request and body, and a page larger than
// [Options.MaxBytes] is rejected with [ErrTooLarge] rather than parsed in
// part, because a truncated page would silently drop series.
//
// [Pages] keeps a set of pages read on their intervals, each by a goroutine of
// its own, and changes the set in place when the configuration changes (Configure); Close(ctx)
// stops them all, llmtap's one lifecycle (internal/lifecycle).
package scrape
