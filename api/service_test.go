package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// serve starts the service on a loopback test server and returns a client of it.
func serve(t *testing.T, opts api.Options) llmtapv1connect.TapServiceClient {
	t.Helper()
	path, h := api.New(opts).Handler()
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return llmtapv1connect.NewTapServiceClient(srv.Client(), srv.URL)
}

// fakeHost is a Host with the parts a test gives it.
type fakeHost struct {
	api.NoHost
	windows   api.Timeline
	shadow    api.Shadow
	loads     *api.RunnerShadow
	recording api.Recording
	mirror    *api.MirrorDoc
	slo       *slo.Tracker
}

func (h fakeHost) Windows() api.Timeline          { return h.windows }
func (h fakeHost) Shadow() api.Shadow             { return h.shadow }
func (h fakeHost) ShadowLoads() *api.RunnerShadow { return h.loads }
func (h fakeHost) Recording() api.Recording       { return h.recording }
func (h fakeHost) Mirror() *api.MirrorDoc         { return h.mirror }
func (h fakeHost) SLO() *slo.Tracker              { return h.slo }
func (h fakeHost) serve() func() api.Host         { return func() api.Host { return h } }

// rec is a finished streamed request of model and class.
func rec(model, class string, ttftMs, itlMs float64, out int64, failure string) *record.Record {
	r := &record.Record{Model: model, Class: class, Status: 200, Start: time.Now(), Error: failure,
		OutputTokens: out, OutputTokensSource: record.SourceUsage, InputTokens: 100, InputTokensSource: record.SourceUsage,
		TTFTMs: &ttftMs, ITLMs: &itlMs, DurationMs: ttftMs + itlMs*float64(out-1)}
	lat := r.DurationMs
	r.RequestLatencyMs = &lat
	return r
}

// TestStatsTimeline checks the windows made from the aggregator's rolling window: one series
// per model and class, counts summed over status classes, the successful requests'
// latencies, rates over the span.
func TestStatsTimeline(t *testing.T) {
	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	for range 3 {
		tp.Stats().Add(rec("m", record.ClassLive, 20, 2, 10, ""))
	}
	bad := rec("m", record.ClassLive, 20, 2, 10, record.ErrStream)
	tp.Stats().Add(bad)
	tp.Stats().Add(rec("m", record.ClassShadow, 50, 5, 10, ""))

	now := time.Unix(1_000_000, 500e6)
	st := &api.StatsTimeline{Tap: func() *tap.Tap { return tp }, Now: func() time.Time { return now }}
	ws := st.Windows(0)
	if len(ws) != 1 {
		t.Fatalf("%d windows, want 1", len(ws))
	}
	w := ws[0]
	end := time.Unix(1_000_000, 0)
	if w.Seq != 1_000_000 || w.Source != api.SourceStats || w.Span.AsDuration() <= 0 || w.Duration.AsDuration() != w.Span.AsDuration() ||
		!w.Start.AsTime().Add(w.Duration.AsDuration()).Equal(end) {
		t.Errorf("window seq %d source %q span %v start %v duration %v: want seq 1000000 (Unix seconds), source stats, a span, "+
			"and as the first window, the span as its duration, ending at the second", w.Seq, w.Source, w.Span.AsDuration(), w.Start.AsTime(), w.Duration.AsDuration())
	}
	if len(w.Series) != 2 {
		t.Fatalf("series %v, want live and shadow of m", w.Series)
	}
	live := w.Series[0]
	if live.Class != record.ClassLive {
		live = w.Series[1]
	}
	if live.Requests != 4 || live.Errors != 1 || live.ErrorsByClass[record.ErrStream] != 1 || live.OutputTokens != 30 {
		t.Errorf("live series %v: want 4 requests, 1 stream error, 30 output tokens (of the 3 OK ones)", live)
	}
	if q := live.TtftMs; q.GetCount() != 3 || q.GetP50() < 19.9 || q.GetP50() > 20.1 {
		t.Errorf("live TTFT %v: want 3 values of 20 ms", q)
	}
	if live.RequestRate <= 0 || live.OutputTokenRate <= 0 {
		t.Errorf("live rates %v and %v: want positive", live.RequestRate, live.OutputTokenRate)
	}
	if again := st.Windows(0); len(again) != 1 || again[0] != w {
		t.Errorf("a second stream in the same period got a new window: computed twice")
	}
	if again := st.Windows(w.Seq); len(again) != 0 {
		t.Errorf("Windows(%d) in the same second: %v, want none", w.Seq, again)
	}
	empty := (&api.StatsTimeline{Tap: func() *tap.Tap { return nil }}).Windows(0)
	if len(empty) != 1 || len(empty[0].Series) != 0 {
		t.Errorf("without an engine: %v, want one empty window", empty)
	}
}

// TestStatsTimelineWindowRates checks that a stats window's counts and rates are those of the
// window, as its start and duration say: the requests that completed between two windows over
// the time between them, not the rolling window's (whose span covers the percentiles only).
func TestStatsTimelineWindowRates(t *testing.T) {
	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	add := func(n int, failure string) {
		for range n {
			// 4 of the 10 output tokens are reasoning: a window's output tokens are all
			// generated tokens (total_osl), in the first window as in the next ones.
			r := rec("m", record.ClassLive, 20, 2, 10, failure)
			r.ReasoningTokens = 4
			tp.Stats().Add(r)
		}
	}
	add(30, "") // before the first window: in the rolling window, not in the next windows
	now := time.Unix(2_000_000, 0)
	st := &api.StatsTimeline{Tap: func() *tap.Tap { return tp }, Now: func() time.Time { return now }}
	first := st.Windows(0)[0]
	if first.Series[0].Requests != 30 {
		t.Fatalf("first window: %d requests, want the rolling window's 30", first.Series[0].Requests)
	}
	for _, step := range []struct {
		elapsed    time.Duration
		ok, failed int
		wantRate   float64
		reason     string
	}{
		{time.Second, 19, 0, 19, "a steady second: its 19 requests, per second"},
		{time.Second, 4, 1, 5, "failed requests count as requests and errors"},
		{3 * time.Second, 6, 0, 2, "windows nobody asked for: one window over the three seconds"},
		{time.Second, 0, 0, 0, "traffic ended: the rate falls to zero at once"},
	} {
		prevEnd := now
		now = now.Add(step.elapsed)
		add(step.ok, "")
		add(step.failed, record.ErrStream)
		ws := st.Windows(0)
		w, se := ws[0], ws[0].Series[0]
		if !w.Start.AsTime().Equal(prevEnd) || w.Duration.AsDuration() != step.elapsed {
			t.Errorf("%s: window %v+%v, want %v+%v", step.reason, w.Start.AsTime(), w.Duration.AsDuration(), prevEnd, step.elapsed)
		}
		if se.Requests != int64(step.ok+step.failed) || se.Errors != int64(step.failed) || se.RequestRate != step.wantRate ||
			se.OutputTokens != float64(10*step.ok) || se.OutputTokenRate != float64(10*step.ok)/step.elapsed.Seconds() {
			t.Errorf("%s: series %v, want %d requests (%d errors) at %v/s", step.reason, se, step.ok+step.failed, step.failed, step.wantRate)
		}
		if step.failed > 0 && se.ErrorsByClass[record.ErrStream] != int64(step.failed) {
			t.Errorf("%s: errors by class %v", step.reason, se.ErrorsByClass)
		}
		if q := se.TtftMs; q.GetCount() < 30 {
			t.Errorf("%s: TTFT over %d values: percentiles must stay the rolling window's", step.reason, q.GetCount())
		}
	}
}

// fakeTimeline makes a window every period, numbered from 1, with one series per model. With
// settle > 0 a window is final settle windows after it closed, and then counts 1000 more
// requests (the records that reached it late).
type fakeTimeline struct {
	period time.Duration
	start  time.Time
	models []string
	settle int64
}

func (f *fakeTimeline) Period() time.Duration { return f.period }

func (f *fakeTimeline) Windows(after int64) []*llmtapv1.TimelineWindow {
	n := int64(time.Since(f.start) / f.period)
	from := after + 1
	if after == 0 {
		from = n
	}
	var out []*llmtapv1.TimelineWindow
	for s := max(from, 1); s <= n; s++ {
		w := &llmtapv1.TimelineWindow{Seq: s, Source: "fake", Final: f.settle > 0 && n-s >= f.settle}
		for _, m := range f.models {
			se := &llmtapv1.Series{Model: m, Class: record.ClassLive, Requests: s}
			if w.Final {
				se.Requests += 1000
			}
			w.Series = append(w.Series, se)
		}
		out = append(out, w)
	}
	return out
}

// fakeShadow is one load named "s"; SetRate refuses a negative rate.
type fakeShadow struct {
	mu   sync.Mutex
	load llmtapv1.ShadowLoad
}

func (f *fakeShadow) find(name string) error {
	if name != "" && name != "s" {
		return fmt.Errorf("%w: no shadow load named %q", api.ErrNotFound, name)
	}
	return nil
}

func (f *fakeShadow) Start(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	if err := f.find(name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.load.State = "running"
	return &llmtapv1.ShadowLoad{Name: "s", State: f.load.State, Rate: f.load.Rate}, nil
}

func (f *fakeShadow) Stop(_ context.Context, name string) (*llmtapv1.ShadowLoad, error) {
	if err := f.find(name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.load.State != "running" {
		return nil, fmt.Errorf("%w: shadow load s is not running", api.ErrState)
	}
	f.load.State = "stopped"
	return &llmtapv1.ShadowLoad{Name: "s", State: f.load.State}, nil
}

func (f *fakeShadow) SetRate(_ context.Context, name string, rate float64) (*llmtapv1.ShadowLoad, error) {
	if err := f.find(name); err != nil {
		return nil, err
	}
	if rate < 0 {
		return nil, fmt.Errorf("%w: rate %v is negative", api.ErrInvalid, rate)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.load.Rate = rate
	return &llmtapv1.ShadowLoad{Name: "s", State: f.load.State, Rate: rate}, nil
}

func (f *fakeShadow) Status(context.Context) (*llmtapv1.ShadowState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &llmtapv1.ShadowState{Loads: []*llmtapv1.ShadowLoad{{Name: "s", State: f.load.State, Rate: f.load.Rate}}}, nil
}

// TestStreamTimeline checks the stream over a source: windows in order without gaps at the
// source's period, filtered by model, with the shadow state; a longer interval skips windows.
func TestStreamTimeline(t *testing.T) {
	tl := &fakeTimeline{period: 20 * time.Millisecond, start: time.Now(), models: []string{"a", "b"}}
	sh := &fakeShadow{}
	c := serve(t, api.Options{Host: fakeHost{windows: tl, shadow: sh}.serve()})
	ctx := t.Context()
	if _, err := c.ShadowStart(ctx, connect.NewRequest(&llmtapv1.ShadowStartRequest{})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ShadowSetRate(ctx, connect.NewRequest(&llmtapv1.ShadowSetRateRequest{Name: "s", Rate: 3})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * tl.period) // a window exists

	read := func(req *llmtapv1.StreamTimelineRequest, n int) []*llmtapv1.TimelineWindow {
		st, err := c.StreamTimeline(ctx, connect.NewRequest(req))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var ws []*llmtapv1.TimelineWindow
		for len(ws) < n && st.Receive() {
			ws = append(ws, st.Msg().Window)
		}
		if len(ws) < n {
			t.Fatalf("the stream ended after %d windows: %v", len(ws), st.Err())
		}
		return ws
	}
	ws := read(&llmtapv1.StreamTimelineRequest{Model: "b"}, 5)
	for i, w := range ws {
		if i > 0 && w.Seq != ws[i-1].Seq+1 {
			t.Errorf("window %d has seq %d after %d: want no gap at the source's period", i, w.Seq, ws[i-1].Seq)
		}
		if len(w.Series) != 1 || w.Series[0].Model != "b" {
			t.Errorf("window %d series %v: want only model b", i, w.Series)
		}
		if l := w.GetShadow().GetLoads(); len(l) != 1 || l[0].State != "running" || l[0].Rate != 3 {
			t.Errorf("window %d shadow %v: want load s running at rate 3", i, w.GetShadow())
		}
	}
	ws = read(&llmtapv1.StreamTimelineRequest{Interval: durationpb.New(3 * tl.period)}, 3)
	if len(ws[1].Series) != 2 || ws[1].Seq-ws[0].Seq < 2 {
		t.Errorf("with an interval of 3 periods: seqs %d, %d and %d series: want gaps and both models", ws[0].Seq, ws[1].Seq, len(ws[1].Series))
	}
}

// TestStreamTimelineFinal checks that a window sent before it was final is sent once more when
// it becomes final, with its final figures, and never again; windows stay in order otherwise.
func TestStreamTimelineFinal(t *testing.T) {
	tl := &fakeTimeline{period: 10 * time.Millisecond, start: time.Now(), models: []string{"a"}, settle: 3}
	c := serve(t, api.Options{Host: fakeHost{windows: tl}.serve()})
	time.Sleep(2 * tl.period) // a window exists
	st, err := c.StreamTimeline(t.Context(), connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type seen struct{ provisional, final int }
	got := map[int64]*seen{}
	var first, newest int64
	for n := 0; n < 60 && st.Receive(); n++ {
		w := st.Msg().Window
		if first == 0 {
			first = w.Seq
		}
		s := got[w.Seq]
		if s == nil {
			s = &seen{}
			got[w.Seq] = s
			if w.Seq != newest+1 && newest != 0 {
				t.Errorf("window %d first sent after %d: want no gap", w.Seq, newest)
			}
			newest = max(newest, w.Seq)
		}
		want := w.Seq
		if w.Final {
			s.final++
			want += 1000
		} else {
			s.provisional++
			if s.final > 0 {
				t.Errorf("window %d sent provisional after final", w.Seq)
			}
		}
		if r := w.Series[0].Requests; r != want {
			t.Errorf("window %d (final %v) has %d requests, want %d", w.Seq, w.Final, r, want)
		}
	}
	if st.Err() != nil {
		t.Fatal(st.Err())
	}
	resent := 0
	for seq, s := range got {
		if s.provisional > 1 || s.final > 1 {
			t.Errorf("window %d sent %d times provisional and %d times final: want at most once each", seq, s.provisional, s.final)
		}
		// Every window sent provisional, but the newest few (not final yet), came again final.
		if s.provisional == 1 && s.final == 0 && seq < newest-tl.settle-2 {
			t.Errorf("window %d (of %d..%d) was sent provisional and never final", seq, first, newest)
		}
		if s.provisional == 1 && s.final == 1 {
			resent++
		}
	}
	if resent == 0 {
		t.Errorf("no window was sent again final: %d windows", len(got))
	}
}

// TestControlErrors checks the codes of the control RPCs: errors of the controls, missing
// controls, read-only endpoints and a missing engine.
func TestControlErrors(t *testing.T) {
	ctx := t.Context()
	sh := &fakeShadow{}
	c := serve(t, api.Options{Host: fakeHost{shadow: sh}.serve()})
	if _, err := c.ShadowSetRate(ctx, connect.NewRequest(&llmtapv1.ShadowSetRateRequest{Rate: -1})); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "negative") {
		t.Errorf("SetRate -1: %v, want InvalidArgument with the reason", err)
	}
	if _, err := c.ShadowStop(ctx, connect.NewRequest(&llmtapv1.ShadowStopRequest{})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("Stop while stopped: %v, want FailedPrecondition", err)
	}
	if _, err := c.ShadowStart(ctx, connect.NewRequest(&llmtapv1.ShadowStartRequest{Name: "nope"})); connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("Start nope: %v, want NotFound naming it", err)
	}
	if _, err := c.Summary(ctx, connect.NewRequest(&llmtapv1.SummaryRequest{})); connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "llmtap handler") {
		t.Errorf("Summary without an engine: %v, want Unavailable saying why", err)
	}
	if _, err := c.RecordingStatus(ctx, connect.NewRequest(&llmtapv1.RecordingStatusRequest{})); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("RecordingStatus without recording control: %v, want Unimplemented", err)
	}

	ro := serve(t, api.Options{Host: fakeHost{shadow: sh}.serve(), ReadOnly: true})
	if _, err := ro.ShadowStart(ctx, connect.NewRequest(&llmtapv1.ShadowStartRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("ShadowStart read-only: %v, want PermissionDenied", err)
	}
	if _, err := ro.ShadowStatus(ctx, connect.NewRequest(&llmtapv1.ShadowStatusRequest{})); err != nil {
		t.Errorf("ShadowStatus read-only: %v, want an answer", err)
	}
	// A request past MaxRequestBytes is refused before it is decoded.
	big := &llmtapv1.RecordingStartRequest{Dir: strings.Repeat("x", api.MaxRequestBytes)}
	if _, err := c.RecordingStart(ctx, connect.NewRequest(big)); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a %d-byte request: %v, want ResourceExhausted", api.MaxRequestBytes, err)
	}
	if _, err := c.MirrorStatus(ctx, connect.NewRequest(&llmtapv1.MirrorStatusRequest{})); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("MirrorStatus without a mirror: %v, want Unimplemented", err)
	}
	if _, err := c.SLOStatus(ctx, connect.NewRequest(&llmtapv1.SLOStatusRequest{})); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("SLOStatus without an SLO tracker: %v, want Unimplemented", err)
	}
	status := serve(t, api.Options{ReadOnly: true, Host: fakeHost{mirror: &api.MirrorDoc{}, slo: slo.NewTracker(nil, nil)}.serve()})
	if res, err := status.MirrorStatus(ctx, connect.NewRequest(&llmtapv1.MirrorStatusRequest{})); err != nil || res.Msg.Counters.SkippedShare != nil {
		t.Errorf("MirrorStatus read-only, nothing sampled: %v %v, want an answer without a skipped share", res, err)
	}
	if res, err := status.SLOStatus(ctx, connect.NewRequest(&llmtapv1.SLOStatusRequest{})); err != nil || len(res.Msg.Reports) != 0 {
		t.Errorf("SLOStatus read-only, nothing counted: %v %v, want an empty answer", res, err)
	}
	none := serve(t, api.Options{NoShadow: "no shadow here, for a reason"})
	if _, err := none.ShadowStatus(ctx, connect.NewRequest(&llmtapv1.ShadowStatusRequest{})); connect.CodeOf(err) != connect.CodeUnimplemented || !strings.Contains(err.Error(), "for a reason") {
		t.Errorf("ShadowStatus without shadow: %v, want Unimplemented with the host's reason", err)
	}
}

// TestStreamTimelineCap checks that at most MaxStreams timeline streams are open at once: one
// more is refused with ResourceExhausted, before anything is sent, and counted; a stream that
// ends frees its place (issue 35: 8,000 streams on an unauthenticated site).
func TestStreamTimelineCap(t *testing.T) {
	t.Parallel()
	tl := &fakeTimeline{period: 20 * time.Millisecond, start: time.Now().Add(-time.Second), models: []string{"a"}}
	refused := 0
	var mu sync.Mutex
	opts := api.Options{Host: fakeHost{windows: tl}.serve(), MaxStreams: 3, StreamRefused: func() { mu.Lock(); refused++; mu.Unlock() }}
	svc := api.New(opts)
	path, h := svc.Handler()
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := llmtapv1connect.NewTapServiceClient(srv.Client(), srv.URL)
	open := func(ctx context.Context) error {
		st, err := c.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
		if err != nil {
			return err
		}
		if !st.Receive() {
			return st.Err()
		}
		return nil
	}
	var cancels []context.CancelFunc
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
	})
	for i := range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		if err := open(ctx); err != nil {
			t.Fatalf("stream %d of 3: %v", i+1, err)
		}
	}
	for range 2 {
		if err := open(t.Context()); connect.CodeOf(err) != connect.CodeResourceExhausted {
			t.Fatalf("a stream past the cap: %v, want resource_exhausted", err)
		}
	}
	if o, r := svc.Streams(); o != 3 || r != 2 {
		t.Errorf("Streams() = %d open, %d refused; want 3 and 2", o, r)
	}
	mu.Lock()
	if refused != 2 {
		t.Errorf("StreamRefused called %d times, want 2", refused)
	}
	mu.Unlock()
	cancels[0]()
	for {
		if o, _ := svc.Streams(); o == 2 {
			break
		}
		time.Sleep(time.Millisecond) // the server sees the client leave
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancels = append(cancels, cancel)
	if err := open(ctx); err != nil {
		t.Errorf("a stream after one ended: %v", err)
	}
}
