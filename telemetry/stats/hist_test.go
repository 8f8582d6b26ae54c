package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// numpyPercentile is numpy.percentile's default (linear) method on sorted values.
func numpyPercentile(sorted []float64, p float64) float64 {
	r := float64(len(sorted)-1) * p / 100
	lo := int(math.Floor(r))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(r-float64(lo))
}

// exactStats computes the reference statistics by brute force: two-pass mean and population
// standard deviation, and numpy percentiles on the sorted values.
func exactStats(vs []float64) (avg, std float64, pct [9]float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	avg = sum / float64(len(s))
	var ss float64
	for _, v := range s {
		ss += (v - avg) * (v - avg)
	}
	std = math.Sqrt(ss / float64(len(s)))
	for i, p := range percentiles {
		pct[i] = numpyPercentile(s, p)
	}
	return avg, std, pct
}

func statPercentiles(st Stat) [9]float64 {
	return [9]float64{st.P1, st.P5, st.P10, st.P25, st.P50, st.P75, st.P90, st.P95, st.P99}
}

func near(got, want, rel, abs float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)+abs
}

func TestHistMatchesBruteForce(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n int, f func() float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = f()
		}
		return vs
	}
	tests := []struct {
		name   string
		values []float64
	}{
		{"a single value is every percentile", []float64{42.4242}},
		{"two far-apart values: nearest-rank would be off by the whole gap, numpy interpolates", []float64{1, 1000}},
		{"identical values have zero spread", gen(1000, func() float64 { return 17.5 })},
		{"uniform times from 1 µs to 1 s span every bucket size", gen(20000, func() float64 { return 0.001 + rng.Float64()*1000 })},
		{"log-normal latencies around 50 ms with a long tail", gen(20000, func() float64 { return math.Exp(math.Log(50) + rng.NormFloat64()) })},
		{"sub-millisecond gaps need µs resolution", gen(5000, func() float64 { return 0.005 + rng.Float64()*0.2 })},
		{"a sparse sample of minute-long requests", gen(7, func() float64 { return 30000 + rng.Float64()*60000 })},
		{"a small std next to large values defeats sum-of-squares", gen(5000, func() float64 { return 3_000_000 + rng.Float64()*0.01 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHist(HistOptions{})
			for _, v := range tt.values {
				h.Record(t0, v)
			}
			_, st := h.Snapshot(t0)
			avg, std, pct := exactStats(tt.values)
			if st.Count != int64(len(tt.values)) || st.Clamped != 0 {
				t.Fatalf("count %d clamped %d, want %d and 0", st.Count, st.Clamped, len(tt.values))
			}
			// avg and std come from exact running moments, so only float rounding separates
			// them from the two-pass reference.
			if !near(st.Avg, avg, 1e-12, 0) {
				t.Errorf("avg %v, want %v", st.Avg, avg)
			}
			if !near(st.Std, std, 1e-6, 1e-9) {
				t.Errorf("std %v, want %v", st.Std, std)
			}
			if st.Min != slices.Min(tt.values) || st.Max != slices.Max(tt.values) {
				t.Errorf("min/max %v/%v, want %v/%v", st.Min, st.Max, slices.Min(tt.values), slices.Max(tt.values))
			}
			// The histogram holds round(v·1000) µs in a slot at most 1/1024 of the value wide
			// (3 significant digits: 2048 sub-buckets per power of two). Taking the slot's
			// middle is off by at most half a width (0.049%) plus the 0.5 µs of rounding, and
			// linear interpolation between two such order statistics keeps that bound. So
			// 0.1% + 1 µs holds with margin; a nearest-rank percentile (HdrHistogram's own)
			// fails it on the sparse rows.
			got := statPercentiles(st)
			for i, p := range percentiles {
				if !near(got[i], pct[i], 0.001, 0.001) {
					t.Errorf("p%v = %v, want %v (±0.1%% + 1 µs)", p, got[i], pct[i])
				}
			}
		})
	}
}

func TestSlotMiddleMatchesHdrHistogram(t *testing.T) {
	t.Parallel()
	h := hdrhistogram.New(1, maxMicros, sigFigs)
	rng := rand.New(rand.NewPCG(3, 4))
	vs := []int64{0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 4097, 1 << 20, maxMicros - 1, maxMicros}
	for range 2000 {
		vs = append(vs, rng.Int64N(maxMicros))
	}
	for _, v := range vs {
		h.Reset()
		_ = h.RecordValue(v)
		top := h.ValueAtQuantile(100) // HdrHistogram reports the top of v's slot
		mid := slotMiddle(top)
		if !h.ValuesAreEquivalent(mid, v) {
			t.Fatalf("slotMiddle(%d) = %d is not in the slot of %d", top, mid, v)
		}
		if d := math.Abs(float64(mid - v)); d > float64(v)/2048+0.5 {
			t.Fatalf("slot middle %d is %v from %d, more than half a slot", mid, d, v)
		}
	}
}

func TestHistClampsAndCounts(t *testing.T) {
	t.Parallel()
	h := NewHist(HistOptions{})
	for _, v := range []float64{10, -5, 2 * 3600 * 1000, math.NaN(), math.Inf(1), 20} {
		h.Record(t0, v)
	}
	_, st := h.Snapshot(t0)
	// -5 ms and two hours are recorded at the bounds; NaN and +Inf are skipped. All four count.
	if st.Count != 4 || st.Clamped != 4 {
		t.Fatalf("count %d clamped %d, want 4 and 4", st.Count, st.Clamped)
	}
	if st.Min != -5 || st.Max != 2*3600*1000 {
		t.Fatalf("min/max %v/%v must stay exact", st.Min, st.Max)
	}
	if st.P50 < 10 || st.P50 > 20 {
		t.Fatalf("p50 %v, want between the two in-range values", st.P50)
	}
}

func TestHistTokensAreNotScaled(t *testing.T) {
	t.Parallel()
	h := NewHist(HistOptions{Unit: "tokens", Scale: 1, Max: maxTokens})
	for _, v := range []float64{1, 2, 3, 4} {
		h.Record(t0, v)
	}
	_, st := h.Snapshot(t0)
	if st.Unit != "tokens" || st.P50 != 2.5 || st.Sum != 10 {
		t.Fatalf("got %+v, want unit tokens, p50 2.5, sum 10", st)
	}
}

func TestHistWindowExpiry(t *testing.T) {
	t.Parallel()
	h := NewHist(HistOptions{Window: time.Minute, Slots: 6})
	h.Record(t0, 1)
	h.Record(t0.Add(15*time.Second), 2)
	h.Record(t0.Add(59*time.Second), 3)
	tests := []struct {
		name      string
		at        time.Duration
		winCount  int64
		winMin    float64
		cumCount  int64
		cumMinMax [2]float64
	}{
		{"everything is younger than the window", 59 * time.Second, 3, 1, 3, [2]float64{1, 3}},
		{"the first 10 s slot has left the window", 65 * time.Second, 2, 2, 3, [2]float64{1, 3}},
		{"only the last value's slot remains", 105 * time.Second, 1, 3, 3, [2]float64{1, 3}},
		{"an idle window is empty but the cumulative view keeps all", 10 * time.Minute, 0, 0, 3, [2]float64{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, c := h.Snapshot(t0.Add(tt.at))
			if w.Count != tt.winCount || w.Min != tt.winMin {
				t.Errorf("window count %d min %v, want %d %v", w.Count, w.Min, tt.winCount, tt.winMin)
			}
			if c.Count != tt.cumCount || c.Min != tt.cumMinMax[0] || c.Max != tt.cumMinMax[1] {
				t.Errorf("cumulative count %d min %v max %v, want %d %v", c.Count, c.Min, c.Max, tt.cumCount, tt.cumMinMax)
			}
		})
	}
	// Values keep arriving into slots that were given back to the pool.
	h.Record(t0.Add(10*time.Minute), 4)
	w, c := h.Snapshot(t0.Add(10 * time.Minute))
	if w.Count != 1 || w.P50 != 4 || c.Count != 4 || c.Max != 4 {
		t.Fatalf("after idling: window %+v cumulative %+v", w, c)
	}
}

func TestHistClockGoingBack(t *testing.T) {
	t.Parallel()
	h := NewHist(HistOptions{Window: time.Minute, Slots: 6})
	h.Record(t0.Add(2*time.Minute), 5)
	// A value from more than a window before the newest slot cannot enter the window; it
	// still counts in the cumulative view.
	h.Record(t0, 7)
	w, c := h.Snapshot(t0.Add(2 * time.Minute))
	if w.Count != 1 || w.Max != 5 || c.Count != 2 || c.Max != 7 {
		t.Fatalf("window %+v cumulative %+v", w, c)
	}
}

func TestHistConcurrent(t *testing.T) {
	t.Parallel()
	h := NewHist(HistOptions{})
	const goroutines, each = 4, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				h.Record(t0.Add(time.Duration(i)*time.Millisecond), float64(g*each+i+1))
				if i%100 == 0 {
					h.Snapshot(t0)
				}
			}
		})
	}
	wg.Wait()
	_, c := h.Snapshot(t0)
	n := goroutines * each
	if c.Count != int64(n) || c.Sum != float64(n*(n+1)/2) {
		t.Fatalf("count %d sum %v, want %d %d", c.Count, c.Sum, n, n*(n+1)/2)
	}
}

func TestMomentsMerge(t *testing.T) {
	t.Parallel()
	vs := []float64{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}
	var whole, a, b moments
	for i, v := range vs {
		whole.add(v)
		if i < 4 {
			a.add(v)
		} else {
			b.add(v)
		}
	}
	a.merge(&b)
	if a.n != whole.n || a.sum != whole.sum || a.min != whole.min || a.max != whole.max ||
		!near(a.mean, whole.mean, 1e-15, 0) || !near(a.m2, whole.m2, 1e-12, 0) {
		t.Fatalf("merged %+v, want %+v", a, whole)
	}
}

func FuzzHist(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xef, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte("a histogram of arbitrary bits"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := NewHist(HistOptions{})
		n := 0
		for i := 0; i+8 <= len(data) && n < 512; i += 8 {
			var u uint64
			for _, c := range data[i : i+8] {
				u = u<<8 | uint64(c)
			}
			h.Record(t0, math.Float64frombits(u))
			n++
		}
		_, st := h.Snapshot(t0)
		if st.Count+st.Clamped < int64(n) || st.Count > int64(n) {
			t.Fatalf("count %d clamped %d of %d values", st.Count, st.Clamped, n)
		}
		if _, err := json.Marshal(st); err != nil {
			t.Fatalf("a stat must always serialize: %v", err)
		}
		if st.Count == 0 {
			return
		}
		p := statPercentiles(st)
		prev := st.Min
		for i, v := range p {
			if v < prev || v > st.Max || math.IsNaN(v) {
				t.Fatalf("p%v = %v out of order (prev %v, max %v)", percentiles[i], v, prev, st.Max)
			}
			prev = v
		}
	})
}

func TestHistWindowMatchesBruteForce(t *testing.T) {
	t.Parallel()
	const slots, slotLen = 6, 10 * time.Second
	h := NewHist(HistOptions{Window: slots * slotLen, Slots: slots})
	rng := rand.New(rand.NewPCG(5, 6))
	type obs struct {
		epoch int64
		v     float64
	}
	var seen []obs
	h.Snapshot(t0) // the first time a Hist sees is the base of its slot boundaries
	now := t0
	for i := range 3000 {
		// Gaps up to 300 ms with pauses of up to 80 s now and then, so slots fill, expire
		// while the histogram is idle, and get values between an expiry and the next read.
		now = now.Add(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
		if i%400 == 399 {
			now = now.Add(time.Duration(rng.Int64N(int64(80 * time.Second))))
		}
		v := math.Exp(3 + rng.NormFloat64())
		h.Record(now, v)
		seen = append(seen, obs{int64(now.Sub(t0) / slotLen), v})
		if i%37 != 0 {
			continue
		}
		w, c := h.Snapshot(now)
		e := int64(now.Sub(t0) / slotLen)
		var in []float64
		for _, o := range seen {
			if o.epoch > e-slots {
				in = append(in, o.v)
			}
		}
		if w.Count != int64(len(in)) || c.Count != int64(len(seen)) {
			t.Fatalf("at %v: window count %d cumulative %d, want %d %d", now.Sub(t0), w.Count, c.Count, len(in), len(seen))
		}
		avg, _, pct := exactStats(in)
		got := statPercentiles(w)
		if !near(w.Avg, avg, 1e-9, 0) || w.Min != slices.Min(in) || w.Max != slices.Max(in) {
			t.Fatalf("at %v: window avg/min/max %v/%v/%v, want %v/%v/%v", now.Sub(t0), w.Avg, w.Min, w.Max, avg, slices.Min(in), slices.Max(in))
		}
		for j, p := range percentiles {
			if !near(got[j], pct[j], 0.001, 0.001) {
				t.Fatalf("at %v: window p%v = %v, want %v", now.Sub(t0), p, got[j], pct[j])
			}
		}
	}
}
