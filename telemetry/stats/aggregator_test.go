package stats

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// fakeClock is a settable clock for deterministic windows.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func ptr(v float64) *float64 { return &v }

// streamRecord is a successful streamed chat completion with usage counts: TTFT ttft ms,
// then out tokens one chunk each, gap ms apart.
func streamRecord(model, class string, start time.Time, ttft, gap float64, out int) *record.Record {
	gaps := make([]float64, max(out-1, 0))
	for i := range gaps {
		gaps[i] = gap
	}
	lat := ttft + gap*float64(out-1)
	r := &record.Record{
		Model: model, Class: class, Status: 200, Stream: true, Start: start,
		HeadersMs: ptr(ttft / 2), TTFTMs: ptr(ttft), TTFOMs: ptr(ttft), RequestLatencyMs: ptr(lat),
		InterChunkMs: gaps, DurationMs: lat + 1,
		InputTokens: 100, InputTokensSource: record.SourceUsage,
		OutputTokens: int64(out), OutputTokensSource: record.SourceUsage,
		UsageOutputTokens: int64(out),
	}
	if out >= 2 {
		r.TTSTMs = ptr(gap)
		r.ITLMs = ptr((lat - ttft) / float64(out-1))
	}
	return r
}

func TestAddRecordsEveryMetric(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	r := streamRecord("m", record.ClassLive, t0, 100, 10, 11)
	r.ReasoningTokens = 4
	a.Add(r)
	g, ok := a.Summary().Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	if !ok {
		t.Fatal("no cumulative group for the record's key")
	}
	want := map[string]float64{
		TagTTFT:              100,
		TagTTFO:              100,
		TagTTST:              10,
		TagRequestLatency:    200,
		TagITL:               10,
		TagICL:               10,
		TagHeadersLatency:    50,
		TagPerUserThroughput: 100, // 1 / 10 ms
		TagE2EThroughput:     55,  // 11 tokens / 0.2 s
		TagOutputTokenCount:  7,   // AIPerf's: the 11 generated tokens less the 4 of reasoning
		TagReasoningTokens:   4,
		TagOutputSeqLength:   11, // output + reasoning
		TagInputSeqLength:    100,
		TagDecodeDuration:    100,  // request latency − TTFT
		TagPrefillPerUser:    1000, // 100 input tokens / 0.1 s
	}
	for tag, v := range want {
		st, ok := g.Metrics[tag]
		if !ok {
			t.Errorf("%s missing", tag)
			continue
		}
		if !near(st.Avg, v, 1e-9, 0) || !near(st.P50, v, 0.001, 0.001) {
			t.Errorf("%s avg %v p50 %v, want %v", tag, st.Avg, st.P50, v)
		}
	}
	if n := g.Metrics[TagICL].Count; n != 10 {
		t.Errorf("inter-chunk count %d, want every one of the 10 gaps", n)
	}
	if u := g.Metrics[TagOutputTokenCount].Unit; u != "tokens" {
		t.Errorf("token unit %q", u)
	}
	if u := g.Metrics[TagPerUserThroughput].Unit; u != "tokens/sec/user" {
		t.Errorf("per-user unit %q", u)
	}
}

func TestKeysNeverMix(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	// Each key gets a distinct TTFT so any mixing shows in its min/max.
	recs := []struct {
		model, class string
		status       int
		ttft         float64
	}{
		{"llama", record.ClassLive, 200, 10},
		{"llama", record.ClassShadow, 200, 20},
		{"qwen", record.ClassLive, 200, 30},
		{"qwen", record.ClassMirror, 200, 40},
		{"llama", record.ClassLive, 503, 50},
	}
	for _, rc := range recs {
		for range 3 {
			r := streamRecord(rc.model, rc.class, t0, rc.ttft, 5, 4)
			r.Status = rc.status
			if rc.status >= 400 {
				r.Error = record.ErrHTTP
			}
			a.Add(r)
		}
	}
	s := a.Summary()
	if len(s.Groups) != 2*len(recs) {
		t.Fatalf("%d groups, want %d", len(s.Groups), 2*len(recs))
	}
	for _, rc := range recs {
		k := Key{rc.model, rc.class, (&record.Record{Status: rc.status}).StatusClass()}
		g, ok := s.Find(k, WindowCumulative)
		if !ok {
			t.Fatalf("no group %+v", k)
		}
		if rc.status >= 400 {
			if g.Scalars[TagErrorRequestCount].Value != 3 || len(g.Metrics) != 0 {
				t.Errorf("%+v: errors %v metrics %v, want 3 errors and no distributions", k, g.Scalars[TagErrorRequestCount], g.Metrics)
			}
			continue
		}
		st := g.Metrics[TagTTFT]
		if st.Count != 3 || st.Min != rc.ttft || st.Max != rc.ttft {
			t.Errorf("%+v: TTFT %+v, want 3 values of %v", k, st, rc.ttft)
		}
	}
}

func TestErrorsStayOutOfDistributions(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	a.Add(streamRecord("m", record.ClassLive, t0, 100, 10, 5))
	bad := streamRecord("m", record.ClassLive, t0.Add(time.Second), 9000, 900, 5)
	bad.Error = record.ErrTruncated
	a.Add(bad)
	odd := streamRecord("m", record.ClassLive, t0.Add(time.Second), 9000, 900, 5)
	odd.Error = "something new"
	a.Add(odd)
	g, _ := a.Summary().Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	for tag, st := range g.Metrics {
		if st.Max >= 900 && tag != TagOutputTokenCount && tag != TagOutputSeqLength && tag != TagInputSeqLength && tag != TagPrefillPerUser {
			t.Errorf("%s max %v: a failed request's value entered the distribution", tag, st.Max)
		}
	}
	if g.Scalars[TagRequestCount].Value != 1 || g.Scalars[TagErrorRequestCount].Value != 2 {
		t.Errorf("request/error counts %v/%v, want 1/2", g.Scalars[TagRequestCount], g.Scalars[TagErrorRequestCount])
	}
	if g.Errors[record.ErrTruncated] != 1 || g.Errors["other"] != 1 {
		t.Errorf("errors %v, want one truncated and one other", g.Errors)
	}
	if g.Scalars[TagTotalOutputTokens].Value != 5 {
		t.Errorf("output tokens %v: a failed request's tokens were counted", g.Scalars[TagTotalOutputTokens])
	}
	// The failed requests do not bound the benchmark duration (AIPerf takes it over the valid
	// requests): the one valid request lasts 100 + 4·10 + 1 ms.
	if d := g.Scalars[TagBenchmarkDuration].Value; !near(d, 0.141, 1e-9, 0) {
		t.Errorf("benchmark duration %v s", d)
	}
}

func TestModelsFoldNewModels(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now, Models: labelcap.New(2)})
	for _, m := range []string{"a", "b", "c", "d", "a", "c"} {
		a.Add(streamRecord(m, record.ClassLive, t0, 10, 1, 2))
	}
	// A known model keeps its key with a new class; only new models fold.
	a.Add(streamRecord("b", record.ClassShadow, t0, 10, 1, 2))
	s := a.Summary()
	want := map[Key]float64{
		{"a", record.ClassLive, "2xx"}:        2,
		{"b", record.ClassLive, "2xx"}:        1,
		{"b", record.ClassShadow, "2xx"}:      1,
		{OtherModel, record.ClassLive, "2xx"}: 3,
	}
	if len(s.Groups) != 2*len(want) {
		t.Fatalf("%d groups, want %d", len(s.Groups), 2*len(want))
	}
	for k, n := range want {
		g, ok := s.Find(k, WindowCumulative)
		if !ok || g.Scalars[TagRequestCount].Value != n {
			t.Errorf("%+v: found %v count %v, want %v", k, ok, g.Scalars[TagRequestCount], n)
		}
	}
	if s.Folded != 3 {
		t.Errorf("folded %d, want 3", s.Folded)
	}
}

func TestCumulativeRatesUseBenchmarkDuration(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	// Four requests of 100 tokens in, 10 out, starting 1 s apart and lasting 1 s each:
	// benchmark_duration = last end − first start = 4 s.
	for i := range 4 {
		r := streamRecord("m", record.ClassLive, t0.Add(time.Duration(i)*time.Second), 100, 100, 10)
		r.DurationMs = 1000
		a.Add(r)
	}
	clk.Set(t0.Add(time.Hour))
	g, _ := a.Summary().Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	want := map[string]float64{
		TagBenchmarkDuration: 4,
		TagRequestThroughput: 1,
		TagOutputThroughput:  10,
		TagTotalThroughput:   110,
		TagRequestCount:      4,
		TagTotalOutputTokens: 40,
		TagTotalISL:          400,
	}
	for tag, v := range want {
		if got := g.Scalars[tag].Value; !near(got, v, 1e-12, 0) {
			t.Errorf("%s = %v, want %v", tag, got, v)
		}
	}
	if !g.Start.Equal(t0) || !g.End.Equal(t0.Add(4*time.Second)) {
		t.Errorf("bounds %v–%v", g.Start, g.End)
	}
	if g.Sources.OutputTokens[record.SourceUsage] != 4 || g.Sources.InputTokens[record.SourceUsage] != 4 {
		t.Errorf("sources %+v, want 4 usage counts each", g.Sources)
	}
}

func TestWindowMovesWithTheClock(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now, Window: time.Minute, Slots: 6})
	key := Key{"m", record.ClassLive, "2xx"}
	add := func(at time.Duration, n int, ttft float64) {
		clk.Set(t0.Add(at))
		for range n {
			a.Add(streamRecord("m", record.ClassLive, t0.Add(at), ttft, 1, 2))
		}
	}
	add(5*time.Second, 6, 10)
	add(40*time.Second, 3, 20)
	tests := []struct {
		name     string
		at       time.Duration
		count    float64
		duration float64
		ttftMin  float64
	}{
		{"a young aggregator's window spans only its life", 50 * time.Second, 9, 50, 10},
		{"the window spans 50–60 s: the slot being filled plus five full ones", 75 * time.Second, 3, 55, 20},
		{"an idle window counts nothing but still has a duration", 5 * time.Minute, 0, 50, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Set(t0.Add(tt.at))
			s := a.Summary()
			if s.Window != "60s" {
				t.Fatalf("window label %q", s.Window)
			}
			g, ok := s.Find(key, "60s")
			if !ok {
				t.Fatal("no window group")
			}
			if g.Scalars[TagRequestCount].Value != tt.count || !near(g.Scalars[TagBenchmarkDuration].Value, tt.duration, 1e-12, 0) {
				t.Errorf("count %v duration %v, want %v %v", g.Scalars[TagRequestCount], g.Scalars[TagBenchmarkDuration], tt.count, tt.duration)
			}
			if rt := g.Scalars[TagRequestThroughput].Value; !near(rt, tt.count/tt.duration, 1e-12, 0) {
				t.Errorf("request throughput %v, want %v", rt, tt.count/tt.duration)
			}
			if st, ok := g.Metrics[TagTTFT]; ok != (tt.count > 0) || st.Min != tt.ttftMin {
				t.Errorf("TTFT present %v min %v, want min %v", ok, st.Min, tt.ttftMin)
			}
			c, _ := s.Find(key, WindowCumulative)
			if c.Scalars[TagRequestCount].Value != 9 {
				t.Errorf("cumulative count %v, want 9", c.Scalars[TagRequestCount])
			}
		})
	}
}

func TestNonStreamingRecordHasNoStreamingMetrics(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	a.Add(&record.Record{
		Model: "m", Class: record.ClassLive, Status: 200, Start: t0,
		HeadersMs: ptr(300), RequestLatencyMs: ptr(300), DurationMs: 300,
		OutputTokens: 7, OutputTokensSource: record.SourceTokenizer,
		InputTokensSource: record.SourceNone,
	})
	g, _ := a.Summary().Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	for _, tag := range []string{TagTTFT, TagTTST, TagITL, TagICL, TagPerUserThroughput, TagInputSeqLength, TagReasoningTokens} {
		if _, ok := g.Metrics[tag]; ok {
			t.Errorf("%s present for a non-streaming request without input count", tag)
		}
	}
	if g.Sources.OutputTokens[record.SourceTokenizer] != 1 || g.Sources.InputTokens["none"] != 1 {
		t.Errorf("sources %+v", g.Sources)
	}
	if e2e := g.Metrics[TagE2EThroughput].Avg; !near(e2e, 7/0.3, 1e-12, 0) {
		t.Errorf("e2e throughput %v", e2e)
	}
}

func TestAddConcurrent(t *testing.T) {
	a := New(Options{})
	var wg sync.WaitGroup
	models := []string{"a", "b"}
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				a.Add(streamRecord(models[(g+i)%2], record.ClassLive, time.Now(), 10, 1, 3))
				if i%50 == 0 {
					a.Summary()
				}
			}
		})
	}
	wg.Wait()
	total := 0.0
	for _, g := range a.Summary().Groups {
		if g.Window == WindowCumulative {
			total += g.Scalars[TagRequestCount].Value
			if n := g.Metrics[TagICL].Count; float64(n) != 2*g.Scalars[TagRequestCount].Value {
				t.Errorf("%+v: %d gaps for %v requests", g.Key, n, g.Scalars[TagRequestCount])
			}
		}
	}
	if total != 800 {
		t.Fatalf("total %v, want 800", total)
	}
}

func TestAddNilIsIgnored(t *testing.T) {
	t.Parallel()
	a := New(Options{})
	a.Add(nil)
	if n := len(a.Summary().Groups); n != 0 {
		t.Fatalf("%d groups after a nil record", n)
	}
}

func TestStatusClassMatchesRecord(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 99, 100, 200, 204, 299, 302, 404, 429, 500, 503, 599, 600, 999, -1} {
		if got, want := statusClass(code), (&record.Record{Status: code}).StatusClass(); got != want {
			t.Errorf("statusClass(%d) = %q, record says %q", code, got, want)
		}
	}
}

// TestInterChunkBatchesMergeExactly: the gaps of a record are added as one batch whose moments
// are merged into the cumulative and window distributions; across records with uneven gaps,
// skipped values (NaN) and values below the range, count, sum, mean, min, max and the standard
// deviation must equal those computed directly over every value.
func TestInterChunkBatchesMergeExactly(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	a := New(Options{Now: clk.Now})
	batches := [][]float64{{1, 2, 3.5, 250}, {0.25}, {7, math.NaN(), -2, 11.125, 4}, {}, {1e4, 3}}
	var all []float64
	skipped := 0
	for _, gaps := range batches {
		r := streamRecord("m", record.ClassLive, t0, 100, 10, 11)
		r.InterChunkMs = gaps
		a.Add(r)
		for _, v := range gaps {
			if math.IsNaN(v) {
				skipped++
				continue
			}
			all = append(all, v)
		}
	}
	var sum, lo, hi float64 = 0, math.Inf(1), math.Inf(-1)
	for _, v := range all {
		sum, lo, hi = sum+v, min(lo, v), max(hi, v)
	}
	mean := sum / float64(len(all))
	var ss float64
	for _, v := range all {
		ss += (v - mean) * (v - mean)
	}
	std := math.Sqrt(ss / float64(len(all)))
	for _, w := range []string{WindowCumulative, a.Summary().Window} {
		g, ok := a.Summary().Find(Key{"m", record.ClassLive, "2xx"}, w)
		if !ok {
			t.Fatalf("no %s group", w)
		}
		st := g.Metrics[TagICL]
		if st.Count != int64(len(all)) || !near(st.Sum, sum, 1e-12, 0) || !near(st.Avg, mean, 1e-12, 0) ||
			st.Min != lo || st.Max != hi || !near(st.Std, std, 1e-12, 0) {
			t.Errorf("%s: count %d sum %v avg %v min %v max %v std %v; want %d %v %v %v %v %v",
				w, st.Count, st.Sum, st.Avg, st.Min, st.Max, st.Std, len(all), sum, mean, lo, hi, std)
		}
		if st.Clamped != int64(skipped+1) { // the NaN, and -2 held at the histogram's 0
			t.Errorf("%s: %d clamped, want %d", w, st.Clamped, skipped+1)
		}
	}
}
