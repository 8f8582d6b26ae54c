// Package bench is llmtap's benchmark engine: it sends a workload (synthetic requests, or a
// trace with sessions) to an inference server on a schedule from load/gen, measures
// every response with the engine the proxy uses (telemetry/tap's measuring Transport), and
// writes AIPerf's exports (format/aiperf owns their layout): profile_export.jsonl (a line per
// request), profile_export_aiperf.json and .csv (the summary), with the load generator's own
// self-check (schedule lag, CPU).
//
// Run(ctx, Spec) is the whole API a program needs (see the example). Workloads fill a Spec:
// Conversations and ConversationLoad (multi-turn, datasets, user-centric rate), Replay (a
// trace at its own pace), Phases (ramps, warmup, timeout, timeslices). RunSweep runs a
// concurrency sweep or repeated runs, each with the spec the program builds for it, and
// aggregates them in memory. NewRunInfo describes a command line for the exports, and
// WriteConsole writes the console report to a writer the program passes. The package prints
// nothing of itself and serves nothing: a program watches a run through Spec.OnProgress,
// Spec.OnNote and Spec.Watch (each phase's engine). `llmtap bench` and `llmtap replay`
// (modules/commands) only turn flags into a Spec, print and serve, as vegeta's CLI does over
// its lib. The package imports neither Caddy nor zap.
package bench
