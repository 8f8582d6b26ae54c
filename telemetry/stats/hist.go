package stats

import (
	"math"
	"math/bits"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// sigFigs is the precision of every histogram: 3 significant digits, as docs/metrics.md states.
	sigFigs = 3
	// subBucketBits follows from sigFigs: HdrHistogram keeps 2^11 = 2048 sub-buckets (the power
	// of two above 2×10^3), so a value in bucket b ≥ 1 shares its slot with 2^b neighbours and
	// the slot width is at most 1/1024 of the value.
	subBucketBits = 11

	// DefaultWindow is the span of the rolling window when none is configured.
	DefaultWindow = 60 * time.Second
	// DefaultSlots is how many sub-windows the rolling window is cut into. A window read covers
	// the slots younger than the window, so it spans between (Slots-1)/Slots and all of the
	// window; six 10 s slots keep that error at one slot while holding little more than half
	// the memory of twelve 5 s slots. Each slot of a time metric is one 184 KiB HdrHistogram
	// (3 digits over 1 µs … 1 h), and a busy series holds Slots+2 of them (the slots, their
	// sum and the cumulative one): 1.5 MiB per time metric and key with the default.
	DefaultSlots = 6
)

// percentiles are the percentiles of every Stat (AIPerf's STAT_KEYS).
var percentiles = [9]float64{1, 5, 10, 25, 50, 75, 90, 95, 99}

// histPool recycles the HdrHistograms of one range that expired slots give back.
type histPool struct {
	max int64
	p   sync.Pool
}

func newHistPool(max int64) *histPool {
	hp := &histPool{max: max}
	hp.p.New = func() any { return hdrhistogram.New(1, max, sigFigs) }
	return hp
}

func (hp *histPool) get() *hdrhistogram.Histogram { return hp.p.Get().(*hdrhistogram.Histogram) }

func (hp *histPool) put(h *hdrhistogram.Histogram) {
	h.Reset()
	hp.p.Put(h)
}

// moments are the exact statistics of a set of values: count, sum, extremes, and mean and
// sum of squared deviations (Welford's running update, merged with Chan et al.'s formula),
// which gives a population standard deviation free of the cancellation that sum-of-squares
// suffers when the spread is small next to the values.
type moments struct {
	n        int64
	sum      float64
	mean, m2 float64
	min, max float64
	// clamped counts values recorded at a bound of the histogram's range (or skipped: NaN, ±Inf).
	clamped int64
}

func (m *moments) add(v float64) {
	m.n++
	m.sum += v
	if m.n == 1 {
		m.min, m.max, m.mean, m.m2 = v, v, v, 0
		return
	}
	m.min = min(m.min, v)
	m.max = max(m.max, v)
	d := v - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (v - m.mean)
}

func (m *moments) merge(o *moments) {
	m.clamped += o.clamped
	switch {
	case o.n == 0:
		return
	case m.n == 0:
		c := m.clamped
		*m = *o
		m.clamped = c
		return
	}
	n := m.n + o.n
	d := o.mean - m.mean
	m.m2 += o.m2 + d*d*float64(m.n)*float64(o.n)/float64(n)
	m.mean += d * float64(o.n) / float64(n)
	m.sum += o.sum
	m.min = min(m.min, o.min)
	m.max = max(m.max, o.max)
	m.n = n
}

// dist is a histogram with the exact moments of the same values. The histogram is allocated
// on the first value.
type dist struct {
	h *hdrhistogram.Histogram
	m moments
}

func (d *dist) empty() bool { return d.m.n == 0 && d.m.clamped == 0 }

// slot is one sub-window: the values recorded while the clock was in its epoch.
type slot struct {
	epoch int64
	d     dist
}

// series is the histogram of one metric. Every value goes into three HdrHistograms: the
// cumulative one, the slot of its epoch, and the window sum of the live slots. Reads then
// need no merging: the window sum is rebuilt from the slots only when a slot expires, at
// most once per slot period, and lazily on the next read (until then values skip the stale
// sum). A series is not safe for concurrent use.
type series struct {
	spec  *metricSpec
	cum   dist
	slots []slot
	// win is the sum of the live slots' histograms; dirty means it lacks some and must be
	// rebuilt before it is read.
	win   *hdrhistogram.Histogram
	dirty bool
	// head is the newest epoch seen; slots at or before head-len(slots) have expired.
	head int64
}

func newSeries(spec *metricSpec, slots int) *series {
	s := &series{spec: spec, slots: make([]slot, slots), head: minEpoch}
	for i := range s.slots {
		s.slots[i].epoch = minEpoch
	}
	return s
}

// minEpoch marks a slot that never held values.
const minEpoch = -1 << 63

// advance moves the head to epoch e, empties the slots that fell out of the window and gives
// their histograms back to the pool, so an idle series shrinks to its cumulative histogram.
func (s *series) advance(e int64) {
	if e <= s.head {
		return
	}
	s.head = e
	n := int64(len(s.slots))
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.epoch > e-n || sl.d.empty() {
			continue
		}
		if sl.d.h != nil {
			s.spec.pool.put(sl.d.h)
		}
		sl.d = dist{}
		s.dirty = true
	}
}

// slotAt returns the slot for a value of epoch e, or nil when e is older than the window
// (the clock went back by more than a window): such a value only counts cumulatively.
func (s *series) slotAt(e int64) *slot {
	s.advance(e)
	n := int64(len(s.slots))
	if e <= s.head-n {
		return nil
	}
	sl := &s.slots[floorMod(e, n)]
	sl.epoch = e // an empty slot, or one already holding e: expired slots were emptied above
	return sl
}

// record adds one value, in the metric's display unit, seen in epoch e.
func (s *series) record(e int64, v float64) { s.add(s.slotAt(e), []float64{v}) }

// recordMany adds several values seen in epoch e.
func (s *series) recordMany(e int64, vs []float64) { s.add(s.slotAt(e), vs) }

// maxAbsScaled bounds the scaled values the moments accept (2^53 µs is 285 years): past it
// a value is nonsense in every unit here, and refusing it keeps sums and squares finite, so
// a summary can always be written as JSON.
const maxAbsScaled = 1 << 53

// add records vs cumulatively and, unless sl is nil, in sl and the window sum. Histograms
// hold round(v*scale) clamped to [0, max]; the moments hold v itself, so avg, std, min and
// max stay exact even for clamped values. NaN, ±Inf and absurd magnitudes are not recorded
// at all (they would poison the moments and cannot be written as JSON) and are counted as
// clamped. The moments of vs are taken once and merged into each distribution: a streamed
// answer brings a hundred inter-chunk gaps at a time, and the running mean costs a division
// per value.
func (s *series) add(sl *slot, vs []float64) {
	win := sl != nil && !s.dirty
	var m moments
	for _, v := range vs {
		x := v*s.spec.scale + 0.5
		if !(math.Abs(x) <= maxAbsScaled) { // also true for NaN
			m.clamped++
			continue
		}
		var iv int64
		switch {
		case x < 0:
			m.clamped++
		case x >= float64(s.spec.max):
			iv = s.spec.max
			if x >= float64(s.spec.max)+1 {
				m.clamped++
			}
		default:
			iv = int64(x)
		}
		m.add(v)
		if m.n == 1 {
			s.hists(sl, win)
		}
		// RecordValue cannot fail: iv is within [0, max].
		_ = s.cum.h.RecordValue(iv)
		if sl != nil {
			_ = sl.d.h.RecordValue(iv)
		}
		if win {
			_ = s.win.RecordValue(iv)
		}
	}
	s.cum.m.merge(&m)
	if sl != nil {
		sl.d.m.merge(&m)
	}
}

// hists makes sure the histograms add records into exist.
func (s *series) hists(sl *slot, win bool) {
	if s.cum.h == nil {
		s.cum.h = s.spec.pool.get()
	}
	if sl != nil && sl.d.h == nil {
		sl.d.h = s.spec.pool.get()
	}
	if win && s.win == nil {
		s.win = s.spec.pool.get()
	}
}

// snapshot returns the statistics of the window ending in epoch e and of everything
// recorded.
func (s *series) snapshot(e int64) (window, cumulative Stat) {
	s.advance(e)
	n := int64(len(s.slots))
	var wm moments
	for i := range s.slots {
		if sl := &s.slots[i]; sl.epoch > s.head-n {
			wm.merge(&sl.d.m)
		}
	}
	if s.dirty {
		if s.win != nil {
			s.win.Reset()
		}
		for i := range s.slots {
			sl := &s.slots[i]
			if sl.d.h == nil {
				continue
			}
			if s.win == nil {
				s.win = s.spec.pool.get()
			}
			s.win.Merge(sl.d.h)
		}
		s.dirty = false
	}
	if wm.n == 0 && s.win != nil {
		s.spec.pool.put(s.win)
		s.win = nil
	}
	return makeStat(s.win, &wm, s.spec), makeStat(s.cum.h, &s.cum.m, s.spec)
}

// makeStat builds a Stat from a histogram and the exact moments of the same values.
func makeStat(h *hdrhistogram.Histogram, m *moments, spec *metricSpec) Stat {
	st := Stat{Unit: spec.unit, Count: m.n, Clamped: m.clamped}
	if m.n == 0 {
		return st
	}
	st.Avg = m.sum / float64(m.n)
	st.Sum = m.sum
	st.Min, st.Max = m.min, m.max
	st.Std = math.Sqrt(m.m2 / float64(m.n))
	p := interpolatedPercentiles(h, spec.scale, m.min, m.max)
	st.P1, st.P5, st.P10, st.P25, st.P50 = p[0], p[1], p[2], p[3], p[4]
	st.P75, st.P90, st.P95, st.P99 = p[5], p[6], p[7], p[8]
	return st
}

// interpolatedPercentiles computes numpy's default (linear) percentiles from a histogram:
// the p-th percentile of n sorted values x is x[lo] + (x[hi]-x[lo])·f with rank
// r = (n-1)·p/100, lo = ⌊r⌋, hi = lo+1 and f = r-lo. The order statistics x[k] come from
// HdrHistogram (ValueAtPercentiles at 100·(k+1)/n finds the slot holding the (k+1)-th value)
// and each is taken as the middle of its slot, so it is off by at most half a slot width
// (1/2048 of the value) plus the half unit lost when the value was rounded to an integer.
// Interpolation keeps that bound, and the result is clamped to the exact min and max, which
// makes p0/p100-like tails exact. HdrHistogram's own ValueAtQuantile is nearest-rank and
// reports the top of a slot; it disagrees with numpy by a whole gap between sparse values.
func interpolatedPercentiles(h *hdrhistogram.Histogram, scale, lo, hi float64) (out [len(percentiles)]float64) {
	if h == nil || h.TotalCount() == 0 {
		return out
	}
	n := h.TotalCount()
	type rank struct {
		lo, hi float64 // the quantiles (0–100) that find x[lo] and x[hi]
		f      float64
	}
	var ranks [len(percentiles)]rank
	qs := make([]float64, 0, 2*len(percentiles))
	at := func(k int64) float64 { return 100 * float64(k+1) / float64(n) }
	for i, p := range percentiles {
		r := float64(n-1) * p / 100
		k := int64(r)
		ranks[i] = rank{lo: at(k), hi: at(min(k+1, n-1)), f: r - float64(k)}
		qs = append(qs, ranks[i].lo, ranks[i].hi)
	}
	vals := h.ValueAtPercentiles(qs)
	for i, r := range ranks {
		a := float64(slotMiddle(vals[r.lo])) / scale
		b := float64(slotMiddle(vals[r.hi])) / scale
		out[i] = min(max(a+(b-a)*r.f, lo), hi)
	}
	return out
}

// slotMiddle returns the middle of the HdrHistogram slot whose highest value is v (the value
// ValueAtPercentiles reports). The slot index arithmetic is HdrHistogram's for a lowest
// discernible value of 1: bucket b = bitlen(v|2047) - 11, slot width 2^b.
func slotMiddle(v int64) int64 {
	b := bits.Len64(uint64(v)|(1<<subBucketBits-1)) - subBucketBits
	low := v >> b << b
	return low + (int64(1)<<b)/2
}

// floorMod is the modulo that stays in [0, m) for negative a.
func floorMod(a, m int64) int64 {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// clock maps times to slot epochs: epoch = ⌊(now - base) / slot⌋. The base is the first
// time seen; durations between times use the monotonic clock reading when both times have
// one, so a wall-clock step does not move values between slots.
type clock struct {
	slot    time.Duration
	n       int64
	base    time.Time
	started bool
}

func newClock(window time.Duration, slots int) clock {
	if window <= 0 {
		window = DefaultWindow
	}
	if slots <= 0 {
		slots = DefaultSlots
	}
	slot := window / time.Duration(slots)
	if slot <= 0 {
		slot = 1
	}
	return clock{slot: slot, n: int64(slots)}
}

func (c *clock) start(base time.Time) { c.base, c.started = base, true }

func (c *clock) epoch(now time.Time) int64 {
	if !c.started {
		c.start(now)
	}
	d := int64(now.Sub(c.base))
	e := d / int64(c.slot)
	if d < 0 && d%int64(c.slot) != 0 {
		e--
	}
	return e
}

// windowStart is the start of the oldest slot a read in epoch e covers.
func (c *clock) windowStart(e int64) time.Time {
	return c.base.Add(time.Duration(e-c.n+1) * c.slot)
}

// HistOptions configure a Hist. The zero value records times: display unit ms, values held
// in µs from 1 µs to one hour, a 60 s window of six slots.
type HistOptions struct {
	// Unit is the display unit reported in Stats (default "ms").
	Unit string
	// Scale is the number of recorded integer units per display unit (default 1000: values
	// given in ms are held in µs). Precision is 3 significant digits of the scaled value.
	Scale float64
	// Max is the largest scaled value held (default one hour in µs); larger values are
	// recorded as Max and counted in Stat.Clamped.
	Max int64
	// Window is the span of the rolling window (default 60 s).
	Window time.Duration
	// Slots is the number of sub-windows the window is cut into (default 6).
	Slots int
}

// Hist is a concurrency-safe histogram with exact moments and a rolling window. HdrHistogram
// itself is not safe for concurrent use, so a mutex guards everything; callers pass the
// time, which keeps Hist free of goroutines and tests deterministic.
type Hist struct {
	mu    sync.Mutex
	spec  metricSpec
	clock clock
	s     *series
}

// NewHist returns an empty histogram.
func NewHist(o HistOptions) *Hist {
	if o.Unit == "" {
		o.Unit = unitMs
	}
	if o.Scale <= 0 {
		o.Scale = scaleMsToMicros
	}
	if o.Max <= 0 {
		o.Max = maxMicros
	}
	h := &Hist{
		spec:  metricSpec{unit: o.Unit, scale: o.Scale, max: o.Max, pool: newHistPool(o.Max)},
		clock: newClock(o.Window, o.Slots),
	}
	h.s = newSeries(&h.spec, int(h.clock.n))
	return h
}

// Record adds v, in the display unit, as seen at now.
func (h *Hist) Record(now time.Time, v float64) {
	h.mu.Lock()
	h.s.record(h.clock.epoch(now), v)
	h.mu.Unlock()
}

// RecordMany adds every value of vs under one lock.
func (h *Hist) RecordMany(now time.Time, vs []float64) {
	h.mu.Lock()
	h.s.recordMany(h.clock.epoch(now), vs)
	h.mu.Unlock()
}

// Snapshot returns the statistics of the rolling window ending at now and of every value
// recorded so far.
func (h *Hist) Snapshot(now time.Time) (window, cumulative Stat) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s.snapshot(h.clock.epoch(now))
}
