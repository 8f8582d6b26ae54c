package timeline

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// base is a window boundary for every window length the tests use.
var base = time.Unix(1_800_000_000, 0)

// clock is a settable clock for Options.Now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTL(t *testing.T, c *clock, opts Options) *Timeline {
	t.Helper()
	opts.Now = c.now
	return New(opts)
}

func ms(v float64) *float64 { return &v }

// stream is a successful streamed record starting at start with the given TTFT, inter-chunk
// gaps (ms) and tokens.
func stream(class string, start time.Time, ttft float64, gaps []float64, tokens int64) *record.Record {
	lat := ttft
	for _, g := range gaps {
		lat += g
	}
	return &record.Record{
		Class: class, Model: "m", Start: start, Status: 200, Stream: true,
		TTFTMs: ms(ttft), InterChunkMs: gaps, RequestLatencyMs: ms(lat), DurationMs: lat + 1,
		ITLMs:        ms((lat - ttft) / float64(tokens-1)),
		OutputTokens: tokens, OutputTokensSource: record.SourceUsage, ContentEvents: len(gaps) + 1,
		InputTokens: 100, InputTokensSource: record.SourceUsage,
	}
}

func byStart(ws []Window) map[int64]Window {
	m := map[int64]Window{}
	for _, w := range ws {
		m[w.Seq-base.Unix()] = w
	}
	return m
}

func find(t *testing.T, ws map[int64]Window, k int64, class string) Series {
	t.Helper()
	for _, s := range ws[k].Series {
		if s.Class == class {
			return s
		}
	}
	return Series{}
}

func TestTokensLandWhereProduced(t *testing.T) {
	c := &clock{base.Add(3 * time.Second)}
	tl := newTL(t, c, Options{})
	// Events at 0.5, 0.7, …, 2.3 s: 3 in window 0, 5 in window 1, 2 in window 2; 2 tokens
	// each.
	gaps := make([]float64, 9)
	for i := range gaps {
		gaps[i] = 200
	}
	tl.Add(stream("live", base, 500, gaps, 20))
	c.t = base.Add(4 * time.Second)
	tl.Close(c.t)
	ws := byStart(tl.Windows(Query{}))
	for k, want := range map[int64]float64{0: 6, 1: 10, 2: 4, 3: 0} {
		if got := find(t, ws, k, "live").OutputTokens; math.Abs(got-want) > 1e-9 {
			t.Errorf("window %d: %.3f output tokens, want %.0f", k, got, want)
		}
	}
	w0, w2 := find(t, ws, 0, "live"), find(t, ws, 2, "live")
	if w0.TTFTMs == nil || w0.TTFTMs.P50 != 500 || w0.InputTokens != 100 {
		t.Errorf("window 0 (first token) = %+v, want TTFT 500 and the 100 input tokens", w0)
	}
	if w2.Requests != 1 || w2.ITLMs == nil || w2.TTFTMs != nil {
		t.Errorf("window 2 (completion at 2.301 s) = %+v, want the request, its ITL and no TTFT", w2)
	}
	// In flight at the ends of windows 0 and 1, not at the end of window 2.
	if a, b, d := w0.InFlight, find(t, ws, 1, "live").InFlight, w2.InFlight; a != 1 || b != 1 || d != 0 {
		t.Errorf("in flight at window ends = %d, %d, %d; want 1, 1, 0", a, b, d)
	}
	if w0.OutputTokensPerSecond != 6 {
		t.Errorf("window 0 rate %.3f tokens/s, want 6", w0.OutputTokensPerSecond)
	}
}

// TestFailedRequestTokensCountNowhere: a stream that fails mid-way (tokens streamed, then an
// error event) and an HTTP 500 (prompt counted by the tokenizer) count as requests and errors
// of their completion window, but their tokens are in no window, as in every token total
// (docs/metrics.md): only the successful request's tokens are.
func TestFailedRequestTokensCountNowhere(t *testing.T) {
	c := &clock{base.Add(2 * time.Second)}
	tl := newTL(t, c, Options{})
	tl.Add(stream("live", base, 100, []float64{50, 50}, 3))
	broken := stream("live", base, 100, []float64{50}, 2)
	broken.Error = "stream_error"
	tl.Add(broken)
	tl.Add(&record.Record{Class: "live", Model: "m", Start: base, Status: 500, Error: "http_status", DurationMs: 5,
		InputTokens: 40, InputTokensSource: record.SourceTokenizer})
	c.t = base.Add(3 * time.Second)
	tl.Close(c.t)
	s := find(t, byStart(tl.Windows(Query{})), 0, "live")
	if s.Requests != 3 || s.Errors != 2 || s.InputTokens != 100 || math.Abs(s.OutputTokens-3) > 1e-9 {
		t.Errorf("window 0 = %d requests, %d errors, %v input and %v output tokens; want 3, 2, and the successful request's 100 and 3",
			s.Requests, s.Errors, s.InputTokens, s.OutputTokens)
	}
}

func TestTokensPastTheGapCap(t *testing.T) {
	c := &clock{base.Add(4 * time.Second)}
	tl := newTL(t, c, Options{})
	// 1 timed event at 0.1 s (the TTFT) + 1 gap to 0.2 s; 8 more events dropped from the
	// gaps, spread evenly from 0.2 s to the last content event at 3.4 s (0.4 s apart: 0.6,
	// 1.0, …, 3.4), 1 token each.
	r := stream("live", base, 100, []float64{100}, 10)
	r.ContentEvents, r.InterChunkDropped = 10, 8
	r.RequestLatencyMs, r.DurationMs = ms(3400), 3400
	tl.Add(r)
	c.t = base.Add(5 * time.Second)
	tl.Close(c.t)
	ws := byStart(tl.Windows(Query{}))
	// window 0: 0.1, 0.2, 0.6 → 3; window 1: 1.0, 1.4, 1.8 → 3; window 2: 2.2, 2.6 → 2
	// (3.0 is on the boundary of window 3); window 3: 3.0, 3.4 → 2.
	for k, want := range map[int64]float64{0: 3, 1: 3, 2: 2, 3: 2} {
		if got := find(t, ws, k, "live").OutputTokens; math.Abs(got-want) > 1e-9 {
			t.Errorf("window %d: %.3f tokens, want %.0f", k, got, want)
		}
	}
}

func TestErrorsClassesAndFilters(t *testing.T) {
	c := &clock{base}
	tl := newTL(t, c, Options{})
	tl.Add(stream("live", base.Add(100*time.Millisecond), 50, []float64{10}, 2))
	tl.Add(stream("shadow", base.Add(100*time.Millisecond), 80, []float64{10}, 2))
	bad := &record.Record{Class: "live", Model: "m", Start: base.Add(200 * time.Millisecond), Status: 503,
		Error: record.ErrHTTP, DurationMs: 5}
	tl.Add(bad)
	c.t = base.Add(time.Second)
	tl.Close(c.t)
	all := tl.Windows(Query{})
	if len(all) != 1 {
		t.Fatalf("%d windows closed, want 1", len(all))
	}
	live := find(t, byStart(all), 0, "live")
	if live.Requests != 2 || live.Errors != 1 || live.ErrorsByClass[record.ErrHTTP] != 1 || live.TTFTMs.Count != 1 {
		t.Errorf("live series %+v: want 2 requests, 1 http_status error, 1 TTFT (the failed request's none)", live)
	}
	shadow := tl.Windows(Query{Class: "shadow"})
	if len(shadow[0].Series) != 1 || shadow[0].Series[0].Class != "shadow" || shadow[0].Series[0].TTFTMs.P50 != 80 {
		t.Errorf("class filter: %+v, want the shadow series alone", shadow[0].Series)
	}
	if got := tl.Windows(Query{Since: base.Add(time.Millisecond)}); len(got) != 0 {
		t.Errorf("since after the only window's start returned %d windows", len(got))
	}
	if got := tl.Windows(Query{Since: base}); len(got) != 1 {
		t.Errorf("since at the window's start returned %d windows, want 1", len(got))
	}
}

func TestCloseFinalAndLate(t *testing.T) {
	c := &clock{base}
	var finals []Window
	inflight := int64(7)
	tl := newTL(t, c, Options{Settle: 2 * time.Second, InFlight: func() int64 { return inflight },
		OnFinal: func(w Window) { finals = append(finals, w) }})
	tl.Add(stream("live", base.Add(100*time.Millisecond), 50, []float64{10}, 2))
	c.t = base.Add(time.Second)
	tl.Close(c.t)
	ws := tl.Windows(Query{})
	if len(ws) != 1 || ws[0].Final || ws[0].InFlight == nil || *ws[0].InFlight != 7 {
		t.Fatalf("after the first close: %+v; want one window, not final, in flight 7", ws)
	}
	// Three seconds later window 0 is final (2 s settle), window 1 not yet.
	c.t = base.Add(3 * time.Second)
	tl.Close(c.t)
	if len(finals) != 1 || finals[0].Seq != base.Unix() || !finals[0].Final || finals[0].Series[0].Requests != 1 {
		t.Fatalf("finals = %+v; want window 0 with its request", finals)
	}
	if ws := tl.Windows(Query{}); len(ws) != 3 || ws[1].InFlight != nil {
		t.Errorf("windows after a late tick = %d (want 3); a window closed late has in_flight %v, want none", len(ws), ws[1].InFlight)
	}
	// A stream that ran through window 0 and ended now revises it, counted as late.
	tl.Add(stream("live", base.Add(900*time.Millisecond), 50, []float64{2000}, 2))
	ws = tl.Windows(Query{})
	// Its first token (at 0.95 s) is the one token it adds to window 0.
	if ws[0].Late != 1 || ws[0].Series[0].OutputTokens != 3 {
		t.Errorf("window 0 after a late record: late %d, %v tokens; want 1 and 3", ws[0].Late, ws[0].Series[0].OutputTokens)
	}
	// Far future and long past records are dropped and counted.
	tl.Add(stream("live", base.Add(time.Hour), 50, nil, 1))
	tl.Add(stream("live", base.Add(-time.Hour), 50, nil, 1))
	if d := tl.Dropped(); d != 2 {
		t.Errorf("Dropped = %d, want 2", d)
	}
}

func TestGPUWindow(t *testing.T) {
	c := &clock{base}
	tl := newTL(t, c, Options{})
	s := func(at time.Duration, energyMJ uint64, powerMW, util uint32) []gpu.Sample {
		return []gpu.Sample{{Time: base.Add(at), Index: 0, UUID: "GPU-0", PowerMW: powerMW, EnergyMJ: energyMJ,
			GPUUtil: util, MemUsed: uint64(at), MemTotal: 80, TempC: uint32(at / time.Millisecond / 10),
			Valid: gpu.FieldPower | gpu.FieldEnergy | gpu.FieldUtil | gpu.FieldMemory | gpu.FieldTemp}}
	}
	tl.AddGPU(s(0, 1_000_000, 100_000, 10))
	tl.AddGPU(s(500*time.Millisecond, 1_050_000, 100_000, 30))
	tl.AddGPU(s(1000*time.Millisecond, 1_100_000, 300_000, 50))
	tl.AddGPU(s(1500*time.Millisecond, 1_250_000, 300_000, 70))
	c.t = base.Add(2 * time.Second)
	tl.Close(c.t)
	ws := tl.Windows(Query{})
	g0, g1 := ws[0].GPUs[0], ws[1].GPUs[0]
	if *g0.EnergyJ != 50 || *g0.PowerW != 100 || *g0.UtilPercent != 20 || *g0.TempC != 50 {
		t.Errorf("window 0 GPU = energy %v, power %v, util %v, temp %v; want 50 J (first to last), 100 W, 20%%, 50",
			*g0.EnergyJ, *g0.PowerW, *g0.UtilPercent, *g0.TempC)
	}
	// Window 1's energy counts from window 0's last counter value: 1 250 000 - 1 050 000 mJ.
	if *g1.EnergyJ != 200 || *g1.PowerW != 300 || *g1.MemUsedBytes != uint64(1500*time.Millisecond) {
		t.Errorf("window 1 GPU = energy %v, power %v, mem %v; want 200 J, 300 W, the last memory reading", *g1.EnergyJ, *g1.PowerW, *g1.MemUsedBytes)
	}
	if g0.SMClockMHz != nil || g0.ThrottleReasons != nil {
		t.Error("readings the GPU never reported must be absent, not zero")
	}
}

func TestServerWindow(t *testing.T) {
	c := &clock{base}
	tl := newTL(t, c, Options{})
	bounds := []float64{0.1, 0.5, 1, math.Inf(1)}
	scrapeAt := func(at time.Duration, hits, queries float64, cum []uint64, sum float64) *scrape.ServerMetrics {
		return &scrape.ServerMetrics{Kind: scrape.KindVLLM, Time: base.Add(at), Models: []scrape.ModelMetrics{{
			Model: "m", KVCacheUsage: 0.25, Running: 3, Waiting: 1, PrefixCacheHits: hits, PrefixCacheQueries: queries,
			GenerationTokens: queries, TTFT: scrape.Histogram{UpperBounds: bounds, Cumulative: cum, Sum: sum, Count: cum[3]},
			Valid: scrape.FieldKVCache | scrape.FieldRunning | scrape.FieldWaiting | scrape.FieldPrefixHits |
				scrape.FieldPrefixQueries | scrape.FieldGenerationTokens | scrape.FieldTTFT,
		}}}
	}
	tl.AddServer("http://x/metrics", scrapeAt(200*time.Millisecond, 10, 100, []uint64{1, 1, 1, 1}, 0.05))
	// In window 1: 40 more hits of 200 more queries; 10 more TTFTs, all in (0.1, 0.5].
	tl.AddServer("http://x/metrics", scrapeAt(1200*time.Millisecond, 50, 300, []uint64{1, 11, 11, 11}, 3.05))
	c.t = base.Add(2 * time.Second)
	tl.Close(c.t)
	ws := tl.Windows(Query{})
	sv := ws[1].Servers[0]
	if *sv.KVCacheUsage != 0.25 || *sv.Running != 3 || *sv.PrefixCacheHitRate != 0.2 || *sv.GenerationTokensPerSecond != 200 {
		t.Errorf("window 1 server = %+v; want kv 0.25, running 3, hit rate 0.2, 200 tokens/s", sv)
	}
	// 10 observations in (100, 500] ms: p50 at rank 5 → 100 + 400·5/10 = 300 ms; mean 300 ms.
	if sv.TTFTMs == nil || sv.TTFTMs.Count != 10 || math.Abs(sv.TTFTMs.P50-300) > 1e-9 || math.Abs(sv.TTFTMs.Mean-300) > 1e-9 {
		t.Errorf("window 1 server TTFT = %+v; want 10 values, p50 300 ms, mean 300 ms", sv.TTFTMs)
	}
	if ws[0].Servers[0].PrefixCacheHitRate != nil {
		t.Error("a window with one scrape and no previous one has no rates")
	}
}

// TestEnergyAttribution checks the rule on synthetic polls with exact expected joules.
func TestEnergyAttribution(t *testing.T) {
	a := NewAttributor(8)
	poll := func(sec float64, inFlight int64, e0, e1 uint64, p0, p1 uint32) {
		at := base.Add(time.Duration(sec * float64(time.Second)))
		a.Observe([]gpu.Sample{
			{Time: at, Index: 0, EnergyMJ: e0, PowerMW: p0, GPUUtil: 50, Valid: gpu.FieldEnergy | gpu.FieldPower | gpu.FieldUtil},
			{Time: at, Index: 1, EnergyMJ: e1, PowerMW: p1, GPUUtil: 100, Valid: gpu.FieldEnergy | gpu.FieldPower | gpu.FieldUtil},
		}, inFlight)
	}
	// Two GPUs; interval energies (sum of both): [0,1] 100 J, [1,2] 200 J, [2,3] 300 J.
	poll(0, 2, 0, 0, 100_000, 100_000)
	poll(1, 2, 60_000, 40_000, 100_000, 100_000)
	poll(2, 1, 160_000, 140_000, 200_000, 200_000)
	poll(3, 1, 310_000, 290_000, 200_000, 200_000)

	// A request from 0.5 s to 2.5 s: [0,1] 100 J · 0.5 / 2 in flight = 25 J; [1,2] 200 J ·
	// 1 / 1.5 = 133.33 J; [2,3] 300 J · 0.5 / 1 = 150 J.
	r := &record.Record{Start: base.Add(500 * time.Millisecond), DurationMs: 2000}
	a.Enrich(r)
	if r.GPU == nil {
		t.Fatal("no GPU usage for a request inside the polls")
	}
	want := 25 + 200.0/1.5 + 150
	if math.Abs(r.GPU.EnergyJ-want) > 1e-9 {
		t.Errorf("energy %.6f J, want %.6f J", r.GPU.EnergyJ, want)
	}
	// Power (sum of both GPUs, trapezoid per interval): 200 W over 0.5 s, 300 W over 1 s,
	// 400 W over 0.5 s → 1200/4... = (100 + 300 + 200) / 2 s = 300 W. Util: mean of 50 and 100.
	if math.Abs(r.GPU.PowerW-300) > 1e-9 || math.Abs(r.GPU.UtilPercent-75) > 1e-9 || r.GPU.CoveredMs != 2000 || r.GPU.GPUs != 2 {
		t.Errorf("usage %+v; want 300 W, 75%% util, 2000 ms covered, 2 GPUs", *r.GPU)
	}
	// GPU-seconds split the same way: 2 GPUs · 0.5 s / 2 + 2 · 1 s / 1.5 + 2 · 0.5 s / 1.
	if want := 0.5 + 2/1.5 + 1; math.Abs(r.GPU.GPUSeconds-want) > 1e-9 || r.Cost != nil {
		t.Errorf("GPU-seconds %.6f, want %.6f; cost %+v without a price", r.GPU.GPUSeconds, want, r.Cost)
	}
	// A short request inside one interval pays its fraction: 100 ms of [2,3] alone → 30 J,
	// 0.2 GPU-seconds; at 3.6 per GPU-hour that costs 0.0002, for 40 tokens 5 per million.
	a.SetPrice(3.6)
	short := &record.Record{Start: base.Add(2200 * time.Millisecond), DurationMs: 100, InputTokens: 30, OutputTokens: 10}
	a.Enrich(short)
	if math.Abs(short.GPU.EnergyJ-30) > 1e-9 || math.Abs(short.GPU.GPUSeconds-0.2) > 1e-9 {
		t.Errorf("short request energy %.6f J, %.6f GPU-s; want 30 J, 0.2", short.GPU.EnergyJ, short.GPU.GPUSeconds)
	}
	if c := short.Cost; c == nil || math.Abs(c.Total-0.0002) > 1e-12 || math.Abs(c.PerMillionTokens-5) > 1e-9 || c.Basis != "gpu_hour" {
		t.Errorf("short request cost %+v, want 0.0002 total, 5 per million tokens, basis gpu_hour", c)
	}
	a.SetPrice(0)
	// Outside the polls: nothing.
	late := &record.Record{Start: base.Add(10 * time.Second), DurationMs: 100}
	if a.Enrich(late); late.GPU != nil {
		t.Errorf("a request after the last poll got %+v", *late.GPU)
	}
	// Only the covered part counts for a request that started before the first poll.
	early := &record.Record{Start: base.Add(-time.Second), DurationMs: 1500}
	if a.Enrich(early); early.GPU == nil || early.GPU.CoveredMs != 500 || math.Abs(early.GPU.EnergyJ-25) > 1e-9 {
		t.Errorf("early request = %+v, want 500 ms covered and 25 J", early.GPU)
	}
}

func TestAttributorRingWraps(t *testing.T) {
	a := NewAttributor(3)
	for i := range 5 {
		a.Observe([]gpu.Sample{{Time: base.Add(time.Duration(i) * time.Second), EnergyMJ: uint64(i) * 1000, Valid: gpu.FieldEnergy}}, 1)
	}
	// Polls 2, 3, 4 remain: a request over [0, 4] s is covered from 2 s to 4 s, 1 J per second.
	u, ok := a.Usage(base, base.Add(4*time.Second))
	if !ok || u.CoveredMs != 2000 || math.Abs(u.EnergyJ-2) > 1e-9 {
		t.Errorf("usage after wrap = %+v (%v), want 2000 ms and 2 J", u, ok)
	}
}

// TestModelsFoldBySharedSet: the timeline folds models with the Set it is given, the rule the
// summary and /metrics use: a model that took a place keeps its series in every later window,
// even when other models came first there, and a long name is shortened.
func TestModelsFoldBySharedSet(t *testing.T) {
	c := &clock{base}
	models := labelcap.New(2)
	models.Label("a") // another consumer saw "a" first
	tl := newTL(t, c, Options{Models: models})
	long := strings.Repeat("z", 10<<10)
	add := func(sec int, model string) {
		r := stream("live", base.Add(time.Duration(sec)*time.Second+100*time.Millisecond), 50, []float64{10}, 2)
		r.Model = model
		tl.Add(r)
	}
	add(0, long)
	add(0, "c")
	add(1, "d")
	add(1, "e")
	add(1, "a")
	c.t = base.Add(2 * time.Second)
	tl.Close(c.t)
	got := map[int64]map[string]int64{}
	for _, w := range tl.Windows(Query{}) {
		got[w.Seq-base.Unix()] = map[string]int64{}
		for _, s := range w.Series {
			got[w.Seq-base.Unix()][s.Model] = s.Requests
		}
	}
	want := map[int64]map[string]int64{
		0: {labelcap.Shorten(long): 1, OtherModel: 1},
		1: {OtherModel: 2, "a": 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("series by window %v, want %v", got, want)
	}
}
