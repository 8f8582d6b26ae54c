// Package stats aggregates per-request records into the statistics of the metric contract (docs/metrics.md):
// for every model, traffic class and status class, the distribution of each metric (avg,
// min, max, p1…p99, population std, count) and the derived rates (request, token and good
// request throughput), cumulative and over a rolling window.
//
// Distributions are HdrHistograms at 3 significant digits (times held in µs from 1 µs to one
// hour) next to exact running moments, so avg, std, min and max are exact and percentiles
// are within 0.05% of numpy's linear percentiles. Summaries serialize in the layout of
// AIPerf's profile_export_aiperf.json and .csv and render as AIPerf's console table.
//
// The package knows nothing of HTTP or Caddy and starts no goroutines: callers pass a clock.
package stats
