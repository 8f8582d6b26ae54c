package timeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultWindow    = time.Second
	DefaultKeep      = 15 * time.Minute
	DefaultSettle    = 10 * time.Second
	DefaultMaxValues = 1024
	// maxGPUs and maxServers bound the per-window GPU and server entries, so a source that
	// invents indexes or model names cannot grow a window without limit.
	maxGPUs    = 64
	maxServers = 64
)

// OtherModel is the model of the series that models past the Models set's limit share.
const OtherModel = labelcap.Other

// Options configure a Timeline. The zero value is usable.
type Options struct {
	// Window is the length of a window (default 1 s).
	Window time.Duration
	// Keep is how much history the ring holds (default 15 min); it holds Keep/Window windows,
	// at least Settle/Window + 2.
	Keep time.Duration
	// Settle is how long after its end a window becomes final and is handed to OnFinal
	// (default 10 s).
	Settle time.Duration
	// Models bounds the models that get series of their own, in length and number, with the
	// rule of telemetry/labelcap: the first labelcap.DefaultMax models keep their own series
	// for good, later ones share the series of OtherModel, long names are shortened with a
	// hash suffix. Share one Set with the other consumers of the same records (the summary,
	// /metrics) so they agree. Default: a Set of its own with labelcap.DefaultMax.
	Models *labelcap.Set
	// MaxValues bounds the TTFT and ITL values kept per series and window for percentiles
	// (default 1024); past it a reservoir sample is kept.
	MaxValues int
	// Now is the clock (default time.Now). It bounds how far in the future a contribution
	// may land.
	Now func() time.Time
	// InFlight, when set, is read at each close for the window's live in-flight count.
	InFlight func() int64
	// OnFinal, when set, receives each window as it becomes final, on the goroutine that
	// called Close. The window is the caller's to keep.
	OnFinal func(Window)
}

// Timeline joins request records, GPU samples and server scrapes into fixed windows. It is
// safe for concurrent use: records come from the record pipeline, GPU samples from the
// sampler, scrapes from the scrapers and Close from a ticker, each on its own goroutine.
type Timeline struct {
	opts   Options
	window int64 // ns

	mu      sync.Mutex
	ring    []win
	head    int64 // highest window number created; ring holds (head-len(ring), head]
	closed  int64 // windows numbered ≤ closed are closed
	final   int64 // windows numbered ≤ final are final
	dropped uint64
	adds    uint64 // records added, to count a late record once per window
	rng     uint64 // xorshift state for reservoir sampling
	scratch []float64
}

// MinWindow is the shortest window Validate accepts.
const MinWindow = 10 * time.Millisecond

// Validate reports window, keep or settle that are negative, a window shorter than MinWindow,
// and a keep shorter than one window (zero values are defaults, always valid).
func (o Options) Validate() error {
	switch {
	case o.Window < 0 || o.Keep < 0 || o.Settle < 0:
		return errors.New("window, keep and settle must be positive")
	case o.Window > 0 && o.Window < MinWindow:
		return fmt.Errorf("window %v is shorter than %v", o.Window, MinWindow)
	case o.Window > 0 && o.Keep > 0 && o.Keep < o.Window:
		return fmt.Errorf("keep %v is shorter than one window (%v)", o.Keep, o.Window)
	}
	return nil
}

// New returns an empty Timeline.
func New(opts Options) *Timeline {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.Models == nil {
		opts.Models = labelcap.New(labelcap.DefaultMax)
	}
	if opts.MaxValues <= 0 {
		opts.MaxValues = DefaultMaxValues
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	n := int(opts.Keep / opts.Window)
	n = max(n, int(opts.Settle/opts.Window)+2)
	t := &Timeline{opts: opts, window: int64(opts.Window), ring: make([]win, n), rng: 0x9E3779B97F4A7C15}
	now := t.seq(opts.Now())
	t.head, t.closed, t.final = now-1, now-1, now-1
	for i := range t.ring {
		t.ring[i].seq = minSeq
	}
	return t
}

// minSeq marks a ring slot that holds no window.
const minSeq = -1 << 62

// Window returns the window length.
func (t *Timeline) Window() time.Duration { return t.opts.Window }

// Options returns the options in effect, defaults filled in.
func (t *Timeline) Options() Options { return t.opts }

// seq is the number of the window containing at.
func (t *Timeline) seq(at time.Time) int64 {
	ns := at.UnixNano()
	s := ns / t.window
	if ns < 0 && ns%t.window != 0 {
		s--
	}
	return s
}

func (t *Timeline) startOf(seq int64) time.Time { return time.Unix(0, seq*t.window) }

// win returns window seq, creating it (and any window between the head and it), or nil when
// seq is older than the ring or more than one window past the clock. The caller holds t.mu.
func (t *Timeline) win(seq int64) *win {
	if seq <= t.head-int64(len(t.ring)) {
		return nil
	}
	if seq > t.head {
		if seq > t.seq(t.opts.Now())+1 {
			return nil
		}
		from := max(t.head+1, seq-int64(len(t.ring))+1)
		for s := from; s <= seq; s++ {
			t.ring[t.slot(s)].reset(s)
		}
		t.head = seq
	}
	w := &t.ring[t.slot(seq)]
	if w.seq < seq {
		// A window within the ring that was never created: before the timeline started.
		w.reset(seq)
	}
	return w
}

func (t *Timeline) slot(seq int64) int {
	n := int64(len(t.ring))
	return int(((seq % n) + n) % n)
}

// Consume adds a finalized record; it makes Timeline a record pipeline sink.
func (t *Timeline) Consume(r *record.Record) { t.Add(r) }

// Add spreads one record over the windows its figures happened in (see the package
// documentation).
func (t *Timeline) Add(r *record.Record) {
	if r == nil || r.Start.IsZero() {
		return
	}
	start := r.Start
	end := start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	ok := r.OK()
	model, _ := t.opts.Models.Label(r.Model) // before the lock: it may hash a long name
	first := end
	if r.TTFTMs != nil {
		first = start.Add(msDur(*r.TTFTMs))
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.adds++
	lost := false
	touch := func(seq int64) *series {
		w := t.win(seq)
		if w == nil {
			lost = true
			return nil
		}
		if seq <= t.final && w.lateStamp != t.adds {
			w.late++ // once per record
			w.lateStamp = t.adds
		}
		return w.series(r.Class, model)
	}

	if s := touch(t.seq(end)); s != nil {
		s.requests++
		if !ok {
			s.errors++
			s.addError(r.Error)
		} else if r.ITLMs != nil {
			t.keep(&s.itl, &s.nITL, *r.ITLMs)
		}
	}
	if s := touch(t.seq(first)); s != nil {
		if ok && r.TTFTMs != nil {
			t.keep(&s.ttft, &s.nTTFT, *r.TTFTMs)
		}
		if ok && r.InputTokensSource != record.SourceNone {
			s.inTokens += float64(max(r.InputTokens, 0))
		}
	}
	// A failed request's tokens are in no total (docs/metrics.md, "Which requests count"), as
	// in the summary's total_isl and total_osl.
	if ok && r.OutputTokensSource != record.SourceNone && r.OutputTokens > 0 {
		t.spreadOutput(r, start, first, end, touch)
	}
	// In flight at each window end strictly inside the request's lifetime.
	for seq := t.seq(start); ; seq++ {
		wend := t.startOf(seq + 1)
		if !wend.Before(end) {
			break
		}
		if s := touch(seq); s != nil {
			s.inFlight++
		}
	}
	if lost {
		t.dropped++
	}
}

// spreadOutput adds the record's output tokens to the windows of its content events.
func (t *Timeline) spreadOutput(r *record.Record, start, first, end time.Time, touch func(int64) *series) {
	total := float64(r.OutputTokens)
	events := r.ContentEvents
	if r.TTFTMs == nil || events <= 0 {
		if s := touch(t.seq(end)); s != nil {
			s.outTokens += total
		}
		return
	}
	per := total / float64(events)
	// Event times are walked in Unix nanoseconds, and a window changes when a time passes the
	// current window's end, so the common case (another event in the same window) costs an
	// addition and a comparison. Runs of consecutive events in one window are added at once.
	at := first.UnixNano()
	runSeq := t.seq(first)
	runEnd := (runSeq + 1) * t.window
	runTok := per
	step := func(ns int64) {
		at += ns
		if at >= runEnd || at < runEnd-t.window {
			if s := touch(runSeq); s != nil {
				s.outTokens += runTok
			}
			runSeq = t.seq(time.Unix(0, at))
			runEnd, runTok = (runSeq+1)*t.window, 0
		}
		runTok += per
	}
	timed := min(1+len(r.InterChunkMs), events)
	for i := 1; i < timed; i++ {
		step(int64(r.InterChunkMs[i-1] * float64(time.Millisecond)))
	}
	if rest := events - timed; rest > 0 {
		last := end
		if r.RequestLatencyMs != nil {
			last = start.Add(msDur(*r.RequestLatencyMs))
		}
		gap := (last.UnixNano() - at) / int64(rest)
		for i := 0; i < rest; i++ {
			step(gap)
		}
	}
	if s := touch(runSeq); s != nil {
		s.outTokens += runTok
	}
}

// keep adds v to a bounded value list: all of them up to MaxValues, then a uniform reservoir
// sample. The caller holds t.mu.
func (t *Timeline) keep(vals *[]float32, n *int64, v float64) {
	*n++
	if len(*vals) < t.opts.MaxValues {
		*vals = append(*vals, float32(v))
		return
	}
	t.rng ^= t.rng << 13
	t.rng ^= t.rng >> 7
	t.rng ^= t.rng << 17
	if j := int64(t.rng % uint64(*n)); j < int64(len(*vals)) {
		(*vals)[j] = float32(v)
	}
}

// AddGPU adds one poll of GPU samples, each to the window containing its time. It copies
// what it keeps, so it can be a gpu.Sampler subscriber.
func (t *Timeline) AddGPU(samples []gpu.Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range samples {
		s := &samples[i]
		w := t.win(t.seq(s.Time))
		if w == nil {
			t.dropped++
			continue
		}
		if g := w.gpu(s, maxGPUs); g != nil {
			g.add(s)
		}
	}
}

// AddServer adds one scrape of the inference server at target to the window of its time.
func (t *Timeline) AddServer(target string, sm *scrape.ServerMetrics) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.win(t.seq(sm.Time))
	if w == nil {
		t.dropped++
		return
	}
	for i := range sm.Models {
		// The model names come from the server's own metrics: bounded in length like every label.
		if sv := w.server(target, sm.Kind, labelcap.Shorten(sm.Models[i].Model), maxServers); sv != nil {
			sv.add(&sm.Models[i], sm.Time)
		}
	}
}

// Close closes every window that ended at or before now, taking the live in-flight count for
// the newest of them, and hands the windows that became final to OnFinal. Call it on a tick
// at each window boundary; a late tick closes the windows it missed without an in-flight
// count.
func (t *Timeline) Close(now time.Time) {
	var finals []Window
	t.mu.Lock()
	last := t.seq(now) - 1 // the newest window that has ended
	if last > t.closed {
		w := t.win(last) // creates the windows up to it, so quiet windows exist too
		if w != nil && t.opts.InFlight != nil {
			w.inFlight, w.hasInFlight = t.opts.InFlight(), true
		}
		t.closed = last
	}
	fin := t.seq(now.Add(-t.opts.Settle)) - 1
	if fin > t.closed {
		fin = t.closed
	}
	for s := max(t.final+1, t.head-int64(len(t.ring))+1); s <= fin; s++ {
		if t.opts.OnFinal != nil {
			if w := t.win(s); w != nil {
				finals = append(finals, t.snapshot(w, "", "", true))
			}
		}
	}
	if fin > t.final {
		t.final = fin
	}
	t.mu.Unlock()
	for _, w := range finals {
		t.opts.OnFinal(w)
	}
}

// Dropped is the number of records, GPU samples and scrapes (or parts of them) that fell
// outside the ring or too far in the future.
func (t *Timeline) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Query selects windows: those starting at or after Since (zero: all), and within them the
// series of Class and Model (empty: all).
type Query struct {
	Since        time.Time
	Class, Model string
}

// Windows returns the closed windows matching q, oldest first.
func (t *Timeline) Windows(q Query) []Window {
	t.mu.Lock()
	defer t.mu.Unlock()
	from := max(t.head-int64(len(t.ring))+1, t.closed-int64(len(t.ring))+1)
	if !q.Since.IsZero() {
		from = max(from, t.seq(q.Since))
		if t.startOf(from).Before(q.Since) {
			from++
		}
	}
	var out []Window
	for s := from; s <= t.closed; s++ {
		w := &t.ring[t.slot(s)]
		if w.seq != s {
			continue
		}
		out = append(out, t.snapshot(w, q.Class, q.Model, s <= t.final))
	}
	return out
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// Run calls Close at every window boundary of the real clock until ctx is done, then returns
// nil. It is the ticker that closes windows; its caller owns the goroutine and joins it.
func (t *Timeline) Run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		now := time.Now()
		next := t.startOf(t.seq(now) + 1)
		timer.Reset(next.Sub(now))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			t.Close(time.Now())
		}
	}
}
