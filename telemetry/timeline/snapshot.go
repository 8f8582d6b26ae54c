package timeline

import (
	"math"
	"slices"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// Window is one closed window as GET /llmtap/timeline and timeline.jsonl show it.
type Window struct {
	// Seq is the window's number: its start in Unix time divided by its length.
	Seq int64 `json:"seq"`
	// Start is when the window began; StartMs is the same instant in Unix milliseconds.
	Start   time.Time `json:"start"`
	StartMs int64     `json:"start_ms"`
	// DurationMs is the window's length in milliseconds.
	DurationMs float64 `json:"duration_ms"`
	// Final is true once the window is Settle past its end; until then records of streams
	// that overlapped it may still revise it.
	Final bool `json:"final"`
	// InFlight is the engine's live count of requests in flight, all classes, when the window
	// closed; absent when the close came late (a missed tick) or no engine was attached.
	InFlight *int64 `json:"in_flight,omitempty"`
	// Late counts contributions that reached the window after it was final: the written line
	// (timeline.jsonl) lacks them.
	Late int64 `json:"late,omitempty"`
	// Series holds the request metrics per (class, model), in the order first seen.
	Series []Series `json:"series"`
	// GPUs holds one entry per sampled GPU, by index.
	GPUs []GPU `json:"gpus,omitempty"`
	// Servers holds one entry per scraped server and model.
	Servers []Server `json:"servers,omitempty"`
}

// Series is one traffic class and model in one window.
type Series struct {
	Class string `json:"class"`
	Model string `json:"model"`
	// Requests and Errors count the requests that completed in the window, OK or failed;
	// ErrorsByClass splits Errors by error class.
	Requests      int64            `json:"requests"`
	Errors        int64            `json:"errors"`
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`
	// RequestRate is Requests per second of window.
	RequestRate float64 `json:"request_rate"`
	// InFlight is the number of this series' requests in flight at the window's end.
	InFlight int64 `json:"in_flight"`
	// TTFTMs is the time to first token of the requests whose first token arrived in the
	// window; ITLMs the inter-token latency of the requests that completed in it.
	TTFTMs *Quantiles `json:"ttft_ms,omitempty"`
	ITLMs  *Quantiles `json:"itl_ms,omitempty"`
	// InputTokens and OutputTokens are the tokens attributed to the window (output tokens
	// spread over their events, so fractional); the rates are per second of window.
	InputTokens           float64 `json:"input_tokens"`
	OutputTokens          float64 `json:"output_tokens"`
	InputTokensPerSecond  float64 `json:"input_tokens_per_second"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
}

// Quantiles summarize one metric's values in a window.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	// Count is the number of values, including any left out of the reservoir.
	Count int64 `json:"count"`
}

// GPU is one GPU in one window; a reading the GPU did not report is absent.
type GPU struct {
	Index   int    `json:"index"`
	UUID    string `json:"uuid"`
	Name    string `json:"name,omitempty"`
	Samples int    `json:"samples"`
	// UtilPercent and MemUtilPercent are the means of the samples' GPU and memory-busy
	// percentages.
	UtilPercent    *float64 `json:"util_percent,omitempty"`
	MemUtilPercent *float64 `json:"mem_util_percent,omitempty"`
	// PowerW is the mean of the samples' power.
	PowerW *float64 `json:"power_w,omitempty"`
	// EnergyJ is the energy used in the window (counter difference, or the power integral
	// for a GPU without a counter).
	EnergyJ *float64 `json:"energy_j,omitempty"`
	// MemUsedBytes and MemTotalBytes are the last sample's device memory.
	MemUsedBytes  *uint64 `json:"mem_used_bytes,omitempty"`
	MemTotalBytes *uint64 `json:"mem_total_bytes,omitempty"`
	// TempC is the highest temperature sampled.
	TempC *uint32 `json:"temp_c,omitempty"`
	// SMClockMHz and MemClockMHz are the means of the sampled clocks.
	SMClockMHz  *float64 `json:"sm_clock_mhz,omitempty"`
	MemClockMHz *float64 `json:"mem_clock_mhz,omitempty"`
	// ThrottleReasons is the OR of the samples' clock-event reason bitmasks.
	ThrottleReasons *uint64 `json:"throttle_reasons,omitempty"`
}

// Server is one model of one scraped inference server in one window.
type Server struct {
	// Target is the scraped URL; Kind the server ("vllm", "sglang", "tgi").
	Target string `json:"target"`
	Kind   string `json:"kind"`
	Model  string `json:"model"`
	// KVCacheUsage (fraction 0–1), Running and Waiting are the last scrape's values.
	KVCacheUsage *float64 `json:"kv_cache_usage,omitempty"`
	Running      *float64 `json:"running,omitempty"`
	Waiting      *float64 `json:"waiting,omitempty"`
	// PrefixCacheHitRate is Δhits/Δqueries (tokens) since the previous window's last scrape.
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// PromptTokensPerSecond and GenerationTokensPerSecond are the server's token counters'
	// rates over the same span.
	PromptTokensPerSecond     *float64 `json:"prompt_tokens_per_second,omitempty"`
	GenerationTokensPerSecond *float64 `json:"generation_tokens_per_second,omitempty"`
	// TTFTMs and ITLMs are the server's own latencies of the requests it finished in the
	// span, from its histograms.
	TTFTMs *ServerLatency `json:"ttft_ms,omitempty"`
	ITLMs  *ServerLatency `json:"itl_ms,omitempty"`
	// QueueMs, PrefillMs and DecodeMs are the server's own split of the requests it finished
	// in the span, from its queue, prefill and decode histograms (vLLM's
	// vllm:request_*_time_seconds; SGLang and TGI have a queue histogram only): the
	// "estimated" split of the requests of the window, where the server reports none per
	// request. Split is their means as shares of their sum.
	QueueMs   *ServerLatency `json:"queue_ms,omitempty"`
	PrefillMs *ServerLatency `json:"prefill_ms,omitempty"`
	DecodeMs  *ServerLatency `json:"decode_ms,omitempty"`
	Split     *SplitShares   `json:"split,omitempty"`
}

// SplitShares are the fractions (summing to 1) of a window's mean queue, prefill and decode
// time; present only when all three histograms gained observations.
type SplitShares struct {
	Queue   float64 `json:"queue"`
	Prefill float64 `json:"prefill"`
	Decode  float64 `json:"decode"`
}

// ServerLatency is a latency from a server histogram's increase, in milliseconds.
type ServerLatency struct {
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Count uint64  `json:"count"`
}

// snapshot builds the public form of w, keeping only the series of class and model when set.
// The caller holds t.mu.
func (t *Timeline) snapshot(w *win, class, model string, final bool) Window {
	sec := t.opts.Window.Seconds()
	start := t.startOf(w.seq)
	out := Window{
		Seq: w.seq, Start: start, StartMs: start.UnixMilli(), DurationMs: float64(t.opts.Window) / 1e6,
		Final: final, Late: w.late, Series: []Series{},
	}
	if w.hasInFlight {
		n := w.inFlight
		out.InFlight = &n
	}
	for i := range w.nSeries {
		s := &w.seriesBuf[i]
		if (class != "" && s.class != class) || (model != "" && s.model != model) {
			continue
		}
		se := Series{
			Class: s.class, Model: s.model, Requests: s.requests, Errors: s.errors,
			RequestRate: float64(s.requests) / sec, InFlight: s.inFlight,
			InputTokens: s.inTokens, OutputTokens: s.outTokens,
			InputTokensPerSecond: s.inTokens / sec, OutputTokensPerSecond: s.outTokens / sec,
			TTFTMs: t.quantiles(s.ttft, s.nTTFT), ITLMs: t.quantiles(s.itl, s.nITL),
		}
		for _, e := range s.byError {
			if se.ErrorsByClass == nil {
				se.ErrorsByClass = map[string]int64{}
			}
			se.ErrorsByClass[e.class] = e.n
		}
		out.Series = append(out.Series, se)
	}
	var prev *win
	if p := &t.ring[t.slot(w.seq-1)]; p.seq == w.seq-1 {
		prev = p
	}
	for i := range w.nGPUs {
		g := &w.gpuBuf[i]
		var pg *gpuAcc
		if prev != nil {
			pg = prev.findGPU(g.index, g.uuid)
		}
		out.GPUs = append(out.GPUs, gpuOut(g, pg))
	}
	slices.SortFunc(out.GPUs, func(a, b GPU) int { return a.Index - b.Index })
	for i := range w.nServers {
		sv := &w.serverBuf[i]
		var ps *serverAcc
		if prev != nil {
			ps = prev.findServer(sv.target, sv.model)
		}
		out.Servers = append(out.Servers, serverOut(sv, ps))
	}
	return out
}

// quantiles computes p50 and p99 of vals (numpy's linear interpolation), or nil when there
// are none. The caller holds t.mu (scratch is shared).
func (t *Timeline) quantiles(vals []float32, n int64) *Quantiles {
	if len(vals) == 0 {
		return nil
	}
	t.scratch = t.scratch[:0]
	for _, v := range vals {
		t.scratch = append(t.scratch, float64(v))
	}
	slices.Sort(t.scratch)
	return &Quantiles{P50: quantile(t.scratch, 0.5), P99: quantile(t.scratch, 0.99), Count: n}
}

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

func ptr[T any](v T) *T { return &v }

func gpuOut(g, prev *gpuAcc) GPU {
	o := GPU{Index: g.index, UUID: g.uuid, Name: g.name, Samples: g.n}
	if g.nUtil > 0 {
		o.UtilPercent = ptr(g.util / float64(g.nUtil))
		o.MemUtilPercent = ptr(g.memUtil / float64(g.nUtil))
	}
	if g.nPower > 0 {
		o.PowerW = ptr(g.powerMW / float64(g.nPower) / 1e3)
	}
	switch {
	case g.nE > 0:
		base := g.firstE
		if prev != nil && prev.nE > 0 && g.resets == 0 && g.firstE >= prev.lastE {
			base = prev.lastE
		}
		o.EnergyJ = ptr(float64(g.lastE-base) / 1e3)
	case g.nPower > 0:
		j := g.powerJ
		if prev != nil && prev.nPower > 0 && g.firstPT.After(prev.lastPT) {
			j += (float64(prev.lastPMW) + float64(g.firstPMW)) / 2e3 * g.firstPT.Sub(prev.lastPT).Seconds()
		}
		o.EnergyJ = ptr(j)
	}
	if g.valid&gpu.FieldMemory != 0 {
		o.MemUsedBytes, o.MemTotalBytes = ptr(g.memUsed), ptr(g.memTotal)
	}
	if g.valid&gpu.FieldTemp != 0 {
		o.TempC = ptr(g.tempC)
	}
	if g.nSM > 0 {
		o.SMClockMHz = ptr(g.smMHz / float64(g.nSM))
	}
	if g.nMem > 0 {
		o.MemClockMHz = ptr(g.memMHz / float64(g.nMem))
	}
	if g.valid&gpu.FieldThrottle != 0 {
		o.ThrottleReasons = ptr(g.reasons)
	}
	return o
}

func serverOut(sv, prev *serverAcc) Server {
	o := Server{Target: sv.target, Kind: string(sv.kind), Model: sv.model}
	last := &sv.last
	if last.Has(scrape.FieldKVCache) {
		o.KVCacheUsage = ptr(last.KVCacheUsage)
	}
	if last.Has(scrape.FieldRunning) {
		o.Running = ptr(last.Running)
	}
	if last.Has(scrape.FieldWaiting) {
		o.Waiting = ptr(last.Waiting)
	}
	base, baseT := &sv.first, sv.firstT
	if prev != nil && prev.n > 0 {
		base, baseT = &prev.last, prev.lastT
	}
	both := func(f scrape.ServerField) bool { return last.Has(f) && base.Has(f) }
	if both(scrape.FieldPrefixHits | scrape.FieldPrefixQueries) {
		if dq := last.PrefixCacheQueries - base.PrefixCacheQueries; dq > 0 {
			o.PrefixCacheHitRate = ptr((last.PrefixCacheHits - base.PrefixCacheHits) / dq)
		}
	}
	if sec := sv.lastT.Sub(baseT).Seconds(); sec > 0 {
		if both(scrape.FieldPromptTokens) && last.PromptTokens >= base.PromptTokens {
			o.PromptTokensPerSecond = ptr((last.PromptTokens - base.PromptTokens) / sec)
		}
		if both(scrape.FieldGenerationTokens) && last.GenerationTokens >= base.GenerationTokens {
			o.GenerationTokensPerSecond = ptr((last.GenerationTokens - base.GenerationTokens) / sec)
		}
	}
	if both(scrape.FieldTTFT) {
		o.TTFTMs = histDelta(&last.TTFT, &base.TTFT)
	}
	if both(scrape.FieldITL) {
		o.ITLMs = histDelta(&last.ITL, &base.ITL)
	}
	if both(scrape.FieldQueue) {
		o.QueueMs = histDelta(&last.Queue, &base.Queue)
	}
	if both(scrape.FieldPrefill) {
		o.PrefillMs = histDelta(&last.Prefill, &base.Prefill)
	}
	if both(scrape.FieldDecode) {
		o.DecodeMs = histDelta(&last.Decode, &base.Decode)
	}
	if o.QueueMs != nil && o.PrefillMs != nil && o.DecodeMs != nil {
		if sum := o.QueueMs.Mean + o.PrefillMs.Mean + o.DecodeMs.Mean; sum > 0 {
			o.Split = &SplitShares{Queue: o.QueueMs.Mean / sum, Prefill: o.PrefillMs.Mean / sum, Decode: o.DecodeMs.Mean / sum}
		}
	}
	return o
}

// histDelta is the latency of the observations a histogram gained between two scrapes, in
// milliseconds (the histograms are in seconds), or nil when it gained none or its buckets
// changed or went backwards (a server restart).
func histDelta(h, base *scrape.Histogram) *ServerLatency {
	if h.Count <= base.Count || !slices.Equal(h.UpperBounds, base.UpperBounds) || len(h.Cumulative) != len(base.Cumulative) {
		return nil
	}
	n := h.Count - base.Count
	cum := func(i int) float64 {
		if h.Cumulative[i] < base.Cumulative[i] {
			return math.NaN()
		}
		return float64(h.Cumulative[i] - base.Cumulative[i])
	}
	q := func(p float64) float64 {
		rank := p * float64(n)
		lowerB, lowerC := 0.0, 0.0
		for i, ub := range h.UpperBounds {
			c := cum(i)
			if math.IsNaN(c) {
				return math.NaN()
			}
			if c >= rank {
				if math.IsInf(ub, 1) {
					return lowerB * 1e3 // histogram_quantile returns the highest finite bound
				}
				if c == lowerC {
					return ub * 1e3
				}
				return (lowerB + (ub-lowerB)*(rank-lowerC)/(c-lowerC)) * 1e3
			}
			lowerB, lowerC = ub, c
		}
		return lowerB * 1e3
	}
	l := &ServerLatency{Mean: (h.Sum - base.Sum) / float64(n) * 1e3, P50: q(0.5), P99: q(0.99), Count: n}
	if math.IsNaN(l.P50) || math.IsNaN(l.P99) {
		return nil
	}
	return l
}
