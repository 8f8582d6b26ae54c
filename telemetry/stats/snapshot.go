package stats

import (
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// A Snapshot is the cumulative state of an Aggregator in a form that merges exactly: per key,
// the counters, the time bounds of the valid requests and every distribution as an
// HdrHistogram in hdrhistogram-go's encoded form (V2 compressed, base64) with the exact moments
// of the same values. Merging the snapshots of several aggregators (load generator workers,
// instances) into one with Aggregator.Merge gives the cumulative summary that one aggregator
// fed every record would give: the same counts, bounds and percentiles (HdrHistogram counts
// add exactly); sums, means and deviations agree to float rounding, as they are added in
// another order. Rolling windows are not part of a snapshot.
type Snapshot struct {
	Keys []KeySnapshot `json:"keys"`
}

// KeySnapshot is one key's cumulative state.
type KeySnapshot struct {
	Key    Key                     `json:"key"`
	Counts CountsSnapshot          `json:"counts"`
	First  time.Time               `json:"first"`
	Last   time.Time               `json:"last"`
	Dists  map[string]DistSnapshot `json:"dists"`
}

// CountsSnapshot are a key's counters; maps are by error class and token count source.
type CountsSnapshot struct {
	OK           int64            `json:"ok"`
	Errors       int64            `json:"errors"`
	Good         int64            `json:"good"`
	ByError      map[string]int64 `json:"by_error,omitempty"`
	OSLTokens    int64            `json:"osl_tokens"`
	OutTokens    int64            `json:"out_tokens"`
	InTokens     int64            `json:"in_tokens"`
	ReasonTokens int64            `json:"reason_tokens"`
	OutSources   map[string]int64 `json:"out_sources,omitempty"`
	InSources    map[string]int64 `json:"in_sources,omitempty"`
	EnergyJ      float64          `json:"energy_j,omitempty"`
	EnergyOut    int64            `json:"energy_out,omitempty"`
}

// DistSnapshot is one distribution: the exact moments of its values and their HdrHistogram
// (hdrhistogram-go's Encode with V2CompressedEncodingCookieBase, which is base64 text).
type DistSnapshot struct {
	Count   int64   `json:"count"`
	Clamped int64   `json:"clamped,omitempty"`
	Sum     float64 `json:"sum"`
	Mean    float64 `json:"mean"`
	M2      float64 `json:"m2"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	HDR     string  `json:"hdr,omitempty"`
}

// MaxEncodedHist bounds the encoded HdrHistogram a snapshot may carry, in bytes: a full
// 3-digit histogram of one hour in µs compresses to a few tens of KiB.
const MaxEncodedHist = 4 << 20

func (d *dist) snapshot() (DistSnapshot, error) {
	s := DistSnapshot{Count: d.m.n, Clamped: d.m.clamped, Sum: d.m.sum, Mean: d.m.mean, M2: d.m.m2, Min: d.m.min, Max: d.m.max}
	if d.h != nil {
		b, err := d.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return s, err
		}
		s.HDR = string(b)
	}
	return s, nil
}

// decodeHist decodes an encoded HdrHistogram, refusing one of another range or precision than
// spec's: its counts would not land in the same slots. hdrhistogram-go panics on some
// malformed input; that is an error here.
func decodeHist(enc string, spec *metricSpec) (h *hdrhistogram.Histogram, err error) {
	if len(enc) > MaxEncodedHist {
		return nil, fmt.Errorf("encoded histogram of %d bytes, over the limit of %d", len(enc), MaxEncodedHist)
	}
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("malformed histogram: %v", r)
		}
	}()
	h, err = hdrhistogram.Decode([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("malformed histogram: %w", err)
	}
	if h.LowestTrackableValue() != 1 || h.HighestTrackableValue() != spec.max || h.SignificantFigures() != sigFigs {
		return nil, fmt.Errorf("histogram over [%d, %d] with %d digits, want [1, %d] with %d",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), spec.max, sigFigs)
	}
	return h, nil
}

// merge adds the distribution s into d.
func (d *dist) merge(s DistSnapshot, spec *metricSpec) error {
	if s.Count < 0 || s.Clamped < 0 {
		return errors.New("negative count")
	}
	if s.HDR != "" {
		h, err := decodeHist(s.HDR, spec)
		if err != nil {
			return err
		}
		if h.TotalCount() != s.Count {
			return fmt.Errorf("histogram holds %d values, the moments %d", h.TotalCount(), s.Count)
		}
		if d.h == nil {
			d.h = spec.pool.get()
		}
		d.h.Merge(h)
	} else if s.Count > 0 {
		return fmt.Errorf("%d values without a histogram", s.Count)
	}
	d.m.merge(&moments{n: s.Count, clamped: s.Clamped, sum: s.Sum, mean: s.Mean, m2: s.M2, min: s.Min, max: s.Max})
	return nil
}

func (c *counts) snapshot() CountsSnapshot {
	return CountsSnapshot{OK: c.ok, Errors: c.errors, Good: c.good, ByError: c.errorsByClass(),
		OSLTokens: c.oslTokens, OutTokens: c.outTokens, InTokens: c.inTokens, ReasonTokens: c.reasonTokens,
		OutSources: nonZero(sourceNames[:], c.outSources[:]), InSources: nonZero(sourceNames[:], c.inSources[:]),
		EnergyJ: c.energyJ, EnergyOut: c.energyOut}
}

func countsOf(s CountsSnapshot) counts {
	c := counts{ok: s.OK, errors: s.Errors, good: s.Good, oslTokens: s.OSLTokens, outTokens: s.OutTokens,
		inTokens: s.InTokens, reasonTokens: s.ReasonTokens, energyJ: s.EnergyJ, energyOut: s.EnergyOut}
	for k, n := range s.ByError {
		c.byError[errorIndex(k)] += n
	}
	for k, n := range s.OutSources {
		c.outSources[sourceIndex(k)] += n
	}
	for k, n := range s.InSources {
		c.inSources[sourceIndex(k)] += n
	}
	return c
}

// Snapshot returns the cumulative state of every key.
func (a *Aggregator) Snapshot() (Snapshot, error) {
	a.mu.RLock()
	keys := make([]Key, 0, len(a.keys))
	states := make([]*keyState, 0, len(a.keys))
	for k, st := range a.keys {
		keys = append(keys, k)
		states = append(states, st)
	}
	a.mu.RUnlock()
	var out Snapshot
	for i, st := range states {
		st.mu.Lock()
		ks := KeySnapshot{Key: keys[i], Counts: st.total.snapshot(), First: st.first, Last: st.last, Dists: map[string]DistSnapshot{}}
		var err error
		for m, s := range st.series {
			if s == nil || s.cum.empty() {
				continue
			}
			if ks.Dists[specs[m].tag], err = s.cum.snapshot(); err != nil {
				break
			}
		}
		st.mu.Unlock()
		if err != nil {
			return Snapshot{}, err
		}
		out.Keys = append(out.Keys, ks)
	}
	return out, nil
}

// Merge adds a snapshot's cumulative state to the aggregator's, key by key (models folded by
// the aggregator's Models set). A snapshot that does not decode, or whose histograms have
// another range than the metric's, is refused with the key and metric named; keys merged
// before the error stay merged.
func (a *Aggregator) Merge(s Snapshot) error {
	for _, ks := range s.Keys {
		st := a.state(ks.Key)
		st.mu.Lock()
		err := st.merge(ks)
		st.mu.Unlock()
		if err != nil {
			return fmt.Errorf("key %s/%s/%s: %w", ks.Key.Model, ks.Key.Class, ks.Key.StatusClass, err)
		}
	}
	return nil
}

func (st *keyState) merge(ks KeySnapshot) error {
	for tag, d := range ks.Dists {
		m, ok := metricByTag(tag)
		if !ok {
			return fmt.Errorf("unknown metric %q", tag)
		}
		if err := st.seriesOf(m).cum.merge(d, &specs[m]); err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
	}
	c := countsOf(ks.Counts)
	st.total.merge(&c)
	if !ks.First.IsZero() && (st.first.IsZero() || ks.First.Before(st.first)) {
		st.first = ks.First
	}
	if ks.Last.After(st.last) {
		st.last = ks.Last
	}
	return nil
}

// Dist returns the snapshot of every value the histogram recorded.
func (h *Hist) Dist() (DistSnapshot, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.s.cum.snapshot()
}

// MergeDists returns the Stat and the snapshot of the union of the values of several
// snapshots of histograms made with the options o.
func MergeDists(o HistOptions, ds ...DistSnapshot) (Stat, DistSnapshot, error) {
	h := NewHist(o)
	for i, d := range ds {
		if err := h.s.cum.merge(d, &h.spec); err != nil {
			return Stat{}, DistSnapshot{}, fmt.Errorf("distribution %d: %w", i, err)
		}
	}
	merged, err := h.s.cum.snapshot()
	return makeStat(h.s.cum.h, &h.s.cum.m, &h.spec), merged, err
}
