package stats

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/labelcap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// OtherModel is the model name that requests of models past the Models set's limit are
// counted under (labelcap.Other).
const OtherModel = labelcap.Other

// Options configure an Aggregator. The zero value is usable.
type Options struct {
	// Window is the span of the rolling window summaries (default 60 s).
	Window time.Duration
	// Slots is the number of sub-windows the rolling window is cut into (default 6). More
	// slots make the window edge sharper and cost one histogram (184 KiB for a time metric)
	// per metric and key each.
	Slots int
	// Now is the clock (default time.Now). Records enter the window slot of the time they are
	// added, not of their own timestamps, so the window always moves forward.
	Now func() time.Time
	// SLOs are the goodput objectives; without them the goodput metrics are left out.
	SLOs []SLO
	// Models bounds the model names keys hold, in length and number, with the rule of
	// telemetry/labelcap (the first labelcap.DefaultMax models keep their own keys for good,
	// later ones are counted under "_other"; long names are shortened with a hash suffix).
	// Models are what clients choose freely; classes and status classes are already few.
	// Share one Set with every other consumer of the same records so they all agree. Default:
	// a Set of its own with labelcap.DefaultMax.
	Models *labelcap.Set
	// Tenants bounds the tenants of the usage rows (Summary.Usage) the same way. Default: a
	// Set of its own with labelcap.DefaultMax.
	Tenants *labelcap.Set
}

// Aggregator folds per-request records into statistics per key (model, traffic class,
// status class), cumulative and over a rolling window. It is safe for concurrent use and
// starts no goroutines: windows move when records are added or summaries read.
type Aggregator struct {
	now    func() time.Time
	start  time.Time
	clock  clock
	window time.Duration
	slos   []SLO
	objs   []objective
	models *labelcap.Set
	usage  *usageTable

	mu     sync.RWMutex
	keys   map[Key]*keyState
	folded atomic.Int64
}

// New returns an empty aggregator whose measurement starts now.
func New(opts Options) *Aggregator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Models == nil {
		opts.Models = labelcap.New(labelcap.DefaultMax)
	}
	if opts.Tenants == nil {
		opts.Tenants = labelcap.New(labelcap.DefaultMax)
	}
	a := &Aggregator{
		now:    opts.Now,
		start:  opts.Now(),
		clock:  newClock(opts.Window, opts.Slots),
		window: opts.Window,
		slos:   slices.Clone(opts.SLOs),
		objs:   resolve(opts.SLOs),
		models: opts.Models,
		usage:  newUsageTable(opts.Tenants, opts.Models),
		keys:   map[Key]*keyState{},
	}
	a.clock.start(a.start)
	return a
}

// Add records one finished request. A failed request counts as an error of its class and in
// the time bounds, but none of its values enter the distributions, token totals or sources:
// AIPerf measures only valid requests, and a truncated stream's latency is not a latency.
func (a *Aggregator) Add(r *record.Record) {
	if r == nil {
		return
	}
	e := a.clock.epoch(a.now())
	st := a.state(Key{Model: r.Model, Class: r.Class, StatusClass: statusClass(r.Status)})
	ok := r.OK()
	var vs values
	good := false
	if ok {
		vs = extract(r)
		good = len(a.objs) > 0 && meets(&vs, a.objs)
	}
	st.mu.Lock()
	st.add(e, r, &vs, ok, good)
	st.mu.Unlock()
	a.usage.add(r)
}

// statusClasses are record.StatusClass's labels as constants: that method builds a new
// string for every call, and Add runs for every request.
var statusClasses = [...]string{"000", "1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass is record.StatusClass without the allocation.
func statusClass(status int) string {
	if status >= 100 && status < 600 {
		return statusClasses[status/100]
	}
	return statusClasses[0]
}

// state returns the state of key k, after folding its model by the Models set, creating it
// if needed.
func (a *Aggregator) state(k Key) *keyState {
	var folded bool
	if k.Model, folded = a.models.Label(k.Model); folded {
		a.folded.Add(1)
	}
	a.mu.RLock()
	st := a.keys[k]
	a.mu.RUnlock()
	if st != nil {
		return st
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if st = a.keys[k]; st != nil {
		return st
	}
	st = newKeyState(int(a.clock.n))
	a.keys[k] = st
	return st
}

// Summary snapshots every key: a cumulative group and a rolling window group each.
func (a *Aggregator) Summary() Summary {
	now := a.now()
	e := a.clock.epoch(now)
	a.mu.RLock()
	keys := make([]Key, 0, len(a.keys))
	for k := range a.keys {
		keys = append(keys, k)
	}
	states := make([]*keyState, len(keys))
	slices.SortFunc(keys, func(x, y Key) int {
		switch {
		case x.Less(y):
			return -1
		case y.Less(x):
			return 1
		}
		return 0
	})
	for i, k := range keys {
		states[i] = a.keys[k]
	}
	a.mu.RUnlock()

	winStart := a.clock.windowStart(e)
	if winStart.Before(a.start) {
		winStart = a.start
	}
	s := Summary{
		Time:   now,
		Window: windowName(a.window),
		SLOs:   slices.Clone(a.slos),
		Folded: a.folded.Load(),
		Groups: make([]GroupSummary, 0, 2*len(keys)),
		Usage:  a.usage.snapshot(),
	}
	for i, st := range states {
		st.mu.Lock()
		cum, win := st.summarize(e, int64(len(st.ring)))
		st.mu.Unlock()
		cum.Key, win.Key = keys[i], keys[i]
		cum.Window, win.Window = WindowCumulative, s.Window
		win.Start, win.End = winStart, now
		cum.Scalars = scalarValues(&cum.c, cum.End.Sub(cum.Start), len(a.objs) > 0)
		win.Scalars = scalarValues(&win.c, win.End.Sub(win.Start), len(a.objs) > 0)
		s.Groups = append(s.Groups, cum.GroupSummary, win.GroupSummary)
	}
	return s
}

// windowName writes a window span in seconds, "60s", the way summaries label it.
func windowName(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// ErrNoContent is the error class of a response that succeeded at the HTTP level but carried
// no generated content: AIPerf does not count such a request as valid (its record has no
// responses), so the AIPerf-named exports count it as an error. See Invalid.
const ErrNoContent = "no_content"

// errorClasses are the error classes counted separately; anything else counts as "other".
var errorClasses = [...]string{
	record.ErrHTTP, record.ErrStream, record.ErrTruncated,
	record.ErrCanceled, record.ErrUpstream, record.ErrMalformed, ErrNoContent, "other",
}

func errorIndex(class string) int {
	for i, c := range errorClasses[:len(errorClasses)-1] {
		if c == class {
			return i
		}
	}
	return len(errorClasses) - 1
}

// sourceNames are the token count sources, "none" standing for record.SourceNone.
var sourceNames = [...]string{record.SourceUsage, record.SourceTokenizer, record.SourceEvents, "none"}

func sourceIndex(src string) int {
	for i, s := range sourceNames[:len(sourceNames)-1] {
		if s == src {
			return i
		}
	}
	return len(sourceNames) - 1
}

// counts are the counters of one key over some time.
type counts struct {
	ok, errors, good int64
	byError          [len(errorClasses)]int64
	// oslTokens sums the output sequence lengths (all generated tokens), outTokens their
	// non-reasoning part (AIPerf's output_token_count).
	oslTokens, outTokens, inTokens, reasonTokens int64
	outSources, inSources                        [len(sourceNames)]int64
	// energyJ is the GPU energy share of the successful records that carry one, and
	// energyOut their output tokens: the basis of tokens per joule.
	energyJ   float64
	energyOut int64
}

func (c *counts) add(r *record.Record, ok, good bool) {
	if !ok {
		c.errors++
		c.byError[errorIndex(r.Error)]++
		return
	}
	c.ok++
	if good {
		c.good++
	}
	c.oslTokens += max(r.OutputTokens, 0)
	c.outTokens += OutputTokenCount(r)
	c.inTokens += max(r.InputTokens, 0)
	c.reasonTokens += max(r.ReasoningTokens, 0)
	c.outSources[sourceIndex(r.OutputTokensSource)]++
	c.inSources[sourceIndex(r.InputTokensSource)]++
	if r.GPU != nil && r.GPU.EnergyJ > 0 {
		c.energyJ += r.GPU.EnergyJ
		c.energyOut += max(r.OutputTokens, 0)
	}
}

func (c *counts) merge(o *counts) {
	c.ok += o.ok
	c.errors += o.errors
	c.good += o.good
	for i := range c.byError {
		c.byError[i] += o.byError[i]
	}
	c.oslTokens += o.oslTokens
	c.outTokens += o.outTokens
	c.inTokens += o.inTokens
	c.reasonTokens += o.reasonTokens
	for i := range c.outSources {
		c.outSources[i] += o.outSources[i]
		c.inSources[i] += o.inSources[i]
	}
	c.energyJ += o.energyJ
	c.energyOut += o.energyOut
}

// countSlot is the counters of one sub-window.
type countSlot struct {
	epoch int64
	c     counts
}

// keyState is everything known about one key. Its mutex guards all of it, so a summary sees
// counters and histograms of the same instant and Add takes one lock per record.
type keyState struct {
	mu     sync.Mutex
	series [numMetrics]*series
	total  counts
	ring   []countSlot
	// first and last bound the valid records seen: the earliest request start and the latest
	// response end (start + duration), AIPerf's benchmark_duration (its minimum request and
	// maximum response timestamps are taken over valid requests only).
	first, last time.Time
}

func newKeyState(slots int) *keyState {
	st := &keyState{ring: make([]countSlot, slots)}
	for i := range st.ring {
		st.ring[i].epoch = minEpoch
	}
	return st
}

func (st *keyState) seriesOf(m metric) *series {
	s := st.series[m]
	if s == nil {
		s = newSeries(&specs[m], len(st.ring))
		st.series[m] = s
	}
	return s
}

func (st *keyState) add(e int64, r *record.Record, vs *values, ok, good bool) {
	st.total.add(r, ok, good)
	sl := &st.ring[floorMod(e, int64(len(st.ring)))]
	switch {
	case sl.epoch == e:
		sl.c.add(r, ok, good)
	case sl.epoch < e:
		sl.epoch, sl.c = e, counts{}
		sl.c.add(r, ok, good)
	}
	if ok && !r.Start.IsZero() {
		end := r.Start.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
		if st.first.IsZero() || r.Start.Before(st.first) {
			st.first = r.Start
		}
		if end.After(st.last) {
			st.last = end
		}
	}
	if !ok {
		return
	}
	for m := range numMetrics {
		if vs.has[m] {
			st.seriesOf(m).record(e, vs.v[m])
		}
	}
	if len(r.InterChunkMs) > 0 {
		st.seriesOf(mICL).recordMany(e, r.InterChunkMs)
	}
}

// partial is a group being built, with the counters its scalars come from.
type partial struct {
	GroupSummary
	c counts
}

// summarize builds the cumulative and window groups of the key at epoch e (without key,
// window names and window bounds, which the aggregator fills in).
func (st *keyState) summarize(e, n int64) (cum, win partial) {
	cum.c = st.total
	for i := range st.ring {
		if sl := &st.ring[i]; sl.epoch > e-n {
			win.c.merge(&sl.c)
		}
	}
	cum.Start, cum.End = st.first, st.last
	cum.Metrics, win.Metrics = map[string]Stat{}, map[string]Stat{}
	for m, s := range st.series {
		if s == nil {
			continue
		}
		w, c := s.snapshot(e)
		if c.Count > 0 || c.Clamped > 0 {
			cum.Metrics[specs[m].tag] = c
		}
		if w.Count > 0 || w.Clamped > 0 {
			win.Metrics[specs[m].tag] = w
		}
	}
	cum.Sources, cum.Errors = cum.c.sources(), cum.c.errorsByClass()
	win.Sources, win.Errors = win.c.sources(), win.c.errorsByClass()
	return cum, win
}

func (c *counts) sources() Sources {
	return Sources{OutputTokens: nonZero(sourceNames[:], c.outSources[:]), InputTokens: nonZero(sourceNames[:], c.inSources[:])}
}

func (c *counts) errorsByClass() map[string]int64 {
	return nonZero(errorClasses[:], c.byError[:])
}

func nonZero(names []string, ns []int64) map[string]int64 {
	var m map[string]int64
	for i, n := range ns {
		if n != 0 {
			if m == nil {
				m = map[string]int64{}
			}
			m[names[i]] = n
		}
	}
	return m
}

// scalarValues derives the single-value metrics from counters over a duration: counts
// always, rates and the duration when the duration is positive, goodput metrics when SLOs
// are set. Rates use AIPerf's formulas: requests, output tokens and input+output tokens per
// second, the output tokens being the output sequence lengths (total_osl, reasoning included);
// goodput is good requests per second; the good fraction is good / (ok + errors).
func scalarValues(c *counts, d time.Duration, withSLOs bool) map[string]Scalar {
	m := map[string]Scalar{
		TagRequestCount:      {unitRequests, float64(c.ok)},
		TagErrorRequestCount: {unitRequests, float64(c.errors)},
		TagTotalOutputTokens: {unitTokens, float64(c.outTokens)},
		TagTotalOSL:          {unitTokens, float64(c.oslTokens)},
		TagTotalISL:          {unitTokens, float64(c.inTokens)},
	}
	if c.reasonTokens > 0 {
		m[TagTotalReasoning] = Scalar{unitTokens, float64(c.reasonTokens)}
	}
	// Energy per token, over the successful requests that got a GPU energy share (see
	// record.GPUUsage for how a request's share is attributed).
	if c.energyJ > 0 {
		m[TagGPUEnergy] = Scalar{unitJoules, c.energyJ}
		if c.energyOut > 0 {
			m[TagTokensPerJoule] = Scalar{unitTokensPerJoule, float64(c.energyOut) / c.energyJ}
			m[TagJoulesPerOutputToken] = Scalar{unitJoulesPerToken, c.energyJ / float64(c.energyOut)}
		}
	}
	sec := d.Seconds()
	if sec > 0 {
		m[TagBenchmarkDuration] = Scalar{unitSec, sec}
		m[TagRequestThroughput] = Scalar{unitRequestsPerSec, float64(c.ok) / sec}
		m[TagOutputThroughput] = Scalar{unitTokensPerSec, float64(c.oslTokens) / sec}
		m[TagTotalThroughput] = Scalar{unitTokensPerSec, float64(c.oslTokens+c.inTokens) / sec}
	}
	if withSLOs {
		m[TagGoodRequestCount] = Scalar{unitRequests, float64(c.good)}
		if sec > 0 {
			m[TagGoodput] = Scalar{unitRequestsPerSec, float64(c.good) / sec}
		}
		if all := c.ok + c.errors; all > 0 {
			m[TagGoodRequestFrac] = Scalar{unitRatio, float64(c.good) / float64(all)}
		}
	}
	return m
}
