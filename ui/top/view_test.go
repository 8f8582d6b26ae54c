package top

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// fields returns the columns of the row of model and class in a frame.
func fields(frame, model, class string) []string {
	for line := range strings.Lines(frame) {
		f := strings.Fields(line)
		if len(f) >= 10 && f[0] == model && f[1] == class {
			return f
		}
	}
	return nil
}

// TestTopFrame renders a window with every part: the table sorted by model and class, idle
// rows, errors with their main class, GPU, server and shadow lines, and lines cut to a width.
func TestTopFrame(t *testing.T) {
	t.Parallel()
	inFlight, zero := int64(3), int64(0)
	util, power, temp := 87.0, 512.4, 65.0
	used, total := uint64(80<<30), uint64(141<<30)
	kv, running := 0.43, 12.0
	w := &llmtapv1.TimelineWindow{
		Seq: 5, Start: timestamppb.New(time.Date(2026, 12, 1, 3, 40, 11, 0, time.UTC)), Duration: durationpb.New(time.Second),
		Source: "timeline", InFlight: 4,
		Series: []*llmtapv1.Series{
			{Model: "m", Class: "live", Requests: 20, RequestRate: 20, OutputTokenRate: 320, InFlight: &inFlight,
				TtftMs: &llmtapv1.Quantiles{P50: 12.34, P99: 40, Count: 20}, ItlMs: &llmtapv1.Quantiles{P50: 1.02, P99: 3.4, Count: 20},
				Errors: 3, ErrorsByClass: map[string]int64{"http_status": 2, "truncated": 1}},
			{Model: "a", Class: "shadow", Requests: 1, RequestRate: 1, InFlight: &zero},
		},
		Gpus:    []*llmtapv1.GPU{{Index: 0, Name: "NVIDIA H200", UtilizationPercent: &util, PowerWatts: &power, TemperatureCelsius: &temp, MemoryUsedBytes: &used, MemoryTotalBytes: &total}},
		Servers: []*llmtapv1.ServerModel{{Kind: "vllm", Model: "m", KvCacheUsage: &kv, Running: &running}},
		Shadow:  &llmtapv1.ShadowState{Loads: []*llmtapv1.ShadowLoad{{Name: "s", State: "running", Rate: 10, AchievedRate: 9.8, Sent: 120, Ok: 118}}},
	}
	v := New(Options{Base: "http://127.0.0.1:2019", Keep: 2})
	v.Add(&llmtapv1.TimelineWindow{Seq: 4, Series: []*llmtapv1.Series{{Model: "b", Class: "live"}, {Model: "gone", Class: "live"}}})
	v.Add(&llmtapv1.TimelineWindow{Seq: 1}) // an older window must not expire rows
	v.Add(w)
	f := v.Frame(w, 0)
	for _, want := range []string{
		"llmtap top  http://127.0.0.1:2019  03:40:12 UTC  window 1s from timeline\nin flight 4",
		"GPU 0 NVIDIA H200  util 87%  power 512 W  mem 80.0/141.0 GiB  65°C\n",
		"server vllm m  kv cache 43%  running 12\n",
		"shadow s  running  rate 10/s (achieved 9.8/s)  in flight 0  sent 120  ok 118  errors 0  dropped 0\n",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("the frame lacks %q:\n%s", want, f)
		}
	}
	row := fields(f, "m", "live")
	if want := []string{"m", "live", "20.0", "12.3ms", "40.0ms", "1.02ms", "3.40ms", "320.0", "3", "(http_status)", "3"}; !slices.Equal(row, want) {
		t.Errorf("row m/live %q, want %q", row, want)
	}
	if row := fields(f, "b", "live"); !slices.Equal(row, []string{"b", "live", "0.0", "-", "-", "-", "-", "0.0", "0", "-"}) {
		t.Errorf("idle row b/live %q: want zero rate and dashes", row)
	}
	if strings.Index(f, "\n  a") > strings.Index(f, "\n  b") || !strings.Contains(f, "gone") {
		t.Errorf("rows not sorted by model, or a row within keep dropped:\n%s", f)
	}
	v.Add(&llmtapv1.TimelineWindow{Seq: 8})
	if f := v.Frame(&llmtapv1.TimelineWindow{Seq: 8}, 0); strings.Contains(f, "gone") || !strings.Contains(f, "(no requests yet)") {
		t.Errorf("rows idle for more than keep windows still listed:\n%s", f)
	}
	for line := range strings.Lines(v.Frame(w, 40)) {
		if n := len([]rune(strings.TrimSuffix(line, "\n"))); n > 40 {
			t.Errorf("line of %d runes at width 40: %q", n, line)
		}
	}
}

// TestTopFrameStats checks the header of windows from the aggregator's statistics (a config
// without the timeline): the window named is the one the counts and rates cover, and the span
// of the percentiles is named apart when it differs.
func TestTopFrameStats(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 12, 1, 3, 40, 12, 0, time.UTC)
	series := func(rate float64) []*llmtapv1.Series {
		return []*llmtapv1.Series{{Model: "m", Class: "live", Requests: int64(rate), RequestRate: rate, TtftMs: &llmtapv1.Quantiles{P50: 20, P99: 30, Count: 600}}}
	}
	for _, tc := range []struct {
		name           string
		start          time.Time
		duration, span time.Duration
		rate           float64
		header, row    string
	}{
		{"a second", end.Add(-time.Second), time.Second, time.Minute, 19,
			"window 1s from stats (percentiles over the last 1m0s)\n", "19.0"},
		{"the first window", end.Add(-time.Minute), time.Minute, time.Minute, 5.6,
			"window 1m0s from stats\n", "5.6"},
	} {
		w := &llmtapv1.TimelineWindow{Seq: 9, Start: timestamppb.New(tc.start), Duration: durationpb.New(tc.duration),
			Span: durationpb.New(tc.span), Source: "stats", Series: series(tc.rate)}
		v := New(Options{Base: "http://127.0.0.1:2019", Keep: 2})
		v.Add(w)
		f := v.Frame(w, 0)
		if !strings.Contains(f, "03:40:12 UTC  "+tc.header) {
			t.Errorf("%s: header of\n%s\nwant %q", tc.name, f, tc.header)
		}
		if row := fields(f, "m", "live"); len(row) < 3 || row[2] != tc.row {
			t.Errorf("%s: row %q, want REQ/S %s", tc.name, row, tc.row)
		}
	}
}

// TestTopReplacesFinal checks that a window sent again final replaces its provisional version
// in the row's totals, and that it is not the window to show.
func TestTopReplacesFinal(t *testing.T) {
	t.Parallel()
	v := New(Options{Keep: 10})
	series := func(req int64, in float64) []*llmtapv1.Series {
		return []*llmtapv1.Series{{Model: "m", Class: "live", Requests: req, Errors: 1, InputTokens: in, OutputTokens: 2 * in}}
	}
	if !v.Add(&llmtapv1.TimelineWindow{Seq: 5, Series: series(3, 30)}) || !v.Add(&llmtapv1.TimelineWindow{Seq: 6, Series: series(1, 10)}) {
		t.Fatal("a newer window is not reported as the one to show")
	}
	if v.Add(&llmtapv1.TimelineWindow{Seq: 5, Final: true, Series: series(4, 70)}) {
		t.Error("window 5 sent again final is reported as the one to show")
	}
	r := v.Row(Key{"m", "live"})
	if want := (Counts{Requests: 5, Errors: 2, Input: 80, Output: 160}); r.Total != want {
		t.Errorf("totals %+v, want %+v (window 5 replaced by its final version)", r.Total, want)
	}
	if r.Seq != 6 || r.Series.GetRequests() != 1 || r.Provisional() != 1 {
		t.Errorf("row shows window %d with %d requests, %d provisional: want window 6, 1, and only 6 provisional", r.Seq, r.Series.GetRequests(), r.Provisional())
	}
}

// TestTopTenantsWithoutGPU: a tenant whose requests no GPU sample covered shows no GPU time
// and "no GPU*" with its footnote as its cost, not 0.0000 (issue 34: a price without a GPU
// read as free); one with GPU time shows its cost.
func TestTopTenantsWithoutGPU(t *testing.T) {
	t.Parallel()
	v := New(Options{})
	rows := []stats.Usage{
		{UsageKey: stats.UsageKey{Tenant: "gpu-team", Model: "m", Class: "live"}, Requests: 4, GPUSeconds: 2, Cost: 0.0012},
		{UsageKey: stats.UsageKey{Tenant: "cpu-team", Model: "m", Class: "live"}, Requests: 3},
	}
	out := v.TenantTable(rows)
	var gpu, cpu string
	for l := range strings.Lines(out) {
		switch {
		case strings.HasPrefix(l, "gpu-team"):
			gpu = l
		case strings.HasPrefix(l, "cpu-team"):
			cpu = l
		}
	}
	if !strings.Contains(gpu, " 2.00 ") || !strings.Contains(gpu, "0.0012") {
		t.Errorf("tenant with GPU time: %q", gpu)
	}
	if !strings.Contains(cpu, "no GPU*") || strings.Contains(cpu, "0.0000 ") || !strings.Contains(out, "* no GPU samples:") {
		t.Errorf("tenant without GPU samples: %q in\n%s", cpu, out)
	}
}
