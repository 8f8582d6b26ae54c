// Package timeline puts request metrics, GPU samples and the inference server's own metrics on
// one time axis of fixed windows (1 s by default), so a latency step can be read beside the
// power, utilization or KV-cache step that caused it.
//
// # Windows
//
// Window number s covers [s·W, (s+1)·W) in Unix time, so windows of two llmtap instances with
// the same W line up. A window closes when the clock passes its end (Close, called on a tick):
// the engine's live in-flight count is taken then and the window becomes visible. Because a
// request's record reaches the timeline only when the request has ended, a closed window is
// still revised by records that arrive later (a stream that began in it and ended after the
// close). Settle (10 s by default) after its end a window is final: it is handed to OnFinal
// (written to timeline.jsonl) and what arrives for it afterwards is still added in memory but
// counted in Late, so the written line says how complete it was. A ring keeps the last Keep
// (15 min by default) of windows; contributions to windows older than the ring, or more than
// one window in the future (a skewed clock), are dropped and counted in Dropped.
//
// # Where a request's figures land
//
// A request is not assigned to one window as a whole; each figure lands in the window in which
// it happened, from the timestamps the record carries (Start, TTFT, the inter-chunk gaps and
// the duration, all on the proxy's clock):
//
//   - requests, errors (by class), ITL and the request rate: the window in which the response
//     completed (Start + DurationMs);
//   - TTFT: the window in which the first content event arrived (Start + TTFT), so a TTFT step
//     shows in the window where the slow first tokens were seen;
//   - input tokens (of successful requests only, as every token total; a failed request's
//     tokens count nowhere): the same window as TTFT (prefill is done when the first token arrives), or
//     the completion window when the request streamed no content;
//   - output tokens (successful requests only): spread over the content events' times (Start + TTFT + the running sum of
//     the inter-chunk gaps), OutputTokens/ContentEvents per event, so a long stream's tokens
//     land in the windows where they were produced. Events past the record's gap cap
//     (InterChunkDropped) are spread evenly between the last timed event and the last content
//     event; a non-streaming response puts all its tokens at completion;
//   - in flight (per series): the requests that started before the window's end and completed
//     after it, counted from records (so it is exact once they have all ended); the window's
//     top-level InFlight is the engine's live count, all classes, at the close.
//
// Percentiles (p50, p99) are exact over the values of the window up to MaxValues per series
// and metric; past that a uniform reservoir sample of MaxValues is kept, and Count still says
// how many values there were.
//
// # GPU and server samples
//
// A GPU sample lands in the window containing its time. Per GPU a window reports the mean
// utilization, memory-busy percentage, power and SM/memory clocks of its samples, the last
// memory used/total, the highest temperature, the OR of the throttle reasons, and the energy:
// the energy counter's last value in this window minus its last value in the previous window
// (its first value in this window when the previous one has none), falling back to a
// trapezoid integral of power when the GPU has no counter. Server scrapes report the last
// KV-cache usage and running/waiting counts, the prefix-cache hit rate Δhits/Δqueries and the
// token rates over the window, and the server's own TTFT/ITL mean and p50/p99 from the
// differences of its histograms (linear interpolation within a bucket, as histogram_quantile
// does), against the previous window's last scrape.
//
// # Energy per request
//
// [Attributor] keeps a ring of GPU polls with the engine's in-flight count at each poll and
// gives a request its GPU utilization and power averaged over its lifetime and its share of
// the energy (record.GPUUsage). The rule: the energy of each interval between two polls
// (counter difference summed over the GPUs, or the power trapezoid for a GPU without a
// counter) is split equally among the requests in flight in it — the mean of the in-flight
// counts at its two polls, at least one — and a request receives that per-request amount times
// the fraction of the interval it overlapped. Limits: requests are weighted equally whatever
// their size (a long prefill and a short decode step pay the same per second); the in-flight
// count is sampled at the polls, so requests shorter than the interval are undercounted in N
// and get a larger share; every sampled GPU's energy, idle power included, is shared among
// llmtap's requests only (traffic that bypasses llmtap is invisible), and none is attributed
// while nothing is in flight; a request older than the ring gets figures for the covered part
// only (CoveredMs says how much).
//
// A [Hub] routes a process's GPU polls, scrapes and records to its running timeline and energy
// attributor; a [Runner] runs the timeline's goroutine and writes its final windows beside the
// recordings (telemetry/recorder's Beside), keeping the timeline across reconfigurations with
// the same window, keep and settle. Timeline.Run(ctx) is its loop; the Runner's Configure
// starts or reconfigures it and Close(ctx) stops it (llmtap's one lifecycle, internal/lifecycle).
//
// Nothing in this package imports Caddy or zap.
package timeline
