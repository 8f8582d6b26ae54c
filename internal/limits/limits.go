// Package limits holds the bounds llmtap puts on numbers it reads from files, flags and
// configs: what one machine can hold or run, far above what real traffic needs and far below
// what exhausts memory or overflows a sum. Each reader refuses a value over its bound with an
// error that names the bound (and the file and line for files); SECURITY.md lists them.
package limits

import "math"

const (
	// MaxTokens bounds one request's input or output tokens, in a trace file, a --isl or
	// --osl flag, a shadow load's isl/osl or a sampled length: 2 Mi tokens, the largest context
	// window served today (2 M). A synthetic prompt is about 5 bytes a token, so one is at most
	// ~10 MB.
	MaxTokens = 2 << 20

	// MaxHashIDs bounds the prefix-block ids of one trace row: MaxTokens in blocks of 16
	// tokens, the smallest block size in use (Mooncake and AIPerf use 512).
	MaxHashIDs = MaxTokens / 16

	// MaxPoolTokens bounds the prompt tokens built in memory before a load starts (bench's
	// dataset entries, a shadow load's entries or trace bodies): 64 Mi tokens, ~320 MB of text.
	MaxPoolTokens = 64 << 20

	// MaxEntries bounds the distinct prompts of a synthetic dataset (bench's
	// --num-dataset-entries, a shadow load's entries).
	MaxEntries = 1 << 20

	// MaxConcurrency bounds the requests one process keeps in flight (bench's --concurrency,
	// a shadow load's max_in_flight): every one holds a connection, and one client address
	// opens at most ~64 Ki connections to one server.
	MaxConcurrency = 1 << 16

	// MaxTraceMemory bounds the memory a trace read whole takes (replay, trace convert, a
	// shadow trace): the decoded requests, their hash ids, session ids and payloads. The slice
	// that holds them may be twice its length while it grows, so a whole read stays within
	// ~1.5 GiB.
	MaxTraceMemory = 512 << 20

	// MaxTraceRows bounds the rows trace stats keeps counts of (three numbers a row for its
	// percentiles and rate, copied once to sort them): 16 Mi rows, ~800 MB at most.
	MaxTraceRows = 16 << 20

	// MaxDistinctHashIDs bounds the set of block ids trace stats keeps to measure prefix
	// reuse: 8 Mi ids, ~300 MB.
	MaxDistinctHashIDs = 8 << 20

	// MaxPrice bounds a list price, in currency units per million tokens: a million dollars
	// for a million tokens is 10,000 times the dearest model listed today, and a sum of such
	// costs over 2^53 tokens is still a finite float64.
	MaxPrice = 1e6
)

// Finite returns v, or the largest finite float64 of its sign when v is infinite, or 0 when
// it is NaN: what a figure becomes before it is encoded, so that no surface fails on it.
func Finite(v float64) float64 {
	switch {
	case math.IsNaN(v):
		return 0
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}
