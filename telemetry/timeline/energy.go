package timeline

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/record"
)

// DefaultPolls is the number of GPU polls an Attributor keeps: ten minutes at the sampler's
// default 250 ms interval. A request longer than that gets figures for its last ten minutes.
const DefaultPolls = 2400

// Attributor keeps recent GPU polls, each with the number of requests in flight when it was
// taken, and gives each request its lifetime's GPU utilization, power and share of energy
// (see the package documentation for the rule). It is safe for concurrent use: Observe runs on
// the GPU sampler's goroutine, Usage on the record pipeline's.
type Attributor struct {
	mu    sync.Mutex
	polls []poll
	next  int
	full  bool
	price atomic.Pointer[float64] // per GPU-hour; nil or 0: no cost
}

// poll is one GPU poll. Its readings slice keeps its capacity when the ring slot is reused.
type poll struct {
	t        time.Time
	inFlight float64
	gpus     []reading
}

// reading is the part of a gpu.Sample that attribution uses.
type reading struct {
	index    int
	valid    gpu.Field
	powerMW  uint32
	util     uint32
	energyMJ uint64
}

// NewAttributor returns an Attributor keeping n polls (DefaultPolls when n ≤ 0).
func NewAttributor(n int) *Attributor {
	if n <= 0 {
		n = DefaultPolls
	}
	return &Attributor{polls: make([]poll, n)}
}

// Observe adds one poll of every GPU, taken when inFlight requests were being measured. The
// samples' times should agree (one poll); the first one's is used.
func (a *Attributor) Observe(samples []gpu.Sample, inFlight int64) {
	if len(samples) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	p := &a.polls[a.next]
	p.t, p.inFlight, p.gpus = samples[0].Time, float64(inFlight), p.gpus[:0]
	for i := range samples {
		s := &samples[i]
		p.gpus = append(p.gpus, reading{index: s.Index, valid: s.Valid, powerMW: s.PowerMW, util: s.GPUUtil, energyMJ: s.EnergyMJ})
	}
	a.next++
	if a.next == len(a.polls) {
		a.next, a.full = 0, true
	}
}

// at returns the i-th poll, oldest first. The caller holds a.mu.
func (a *Attributor) at(i int) *poll {
	if a.full {
		i += a.next
		if i >= len(a.polls) {
			i -= len(a.polls)
		}
	}
	return &a.polls[i]
}

func (a *Attributor) len() int {
	if a.full {
		return len(a.polls)
	}
	return a.next
}

// Usage returns what the GPUs did between start and end, or false when no interval between
// two polls overlaps that span.
func (a *Attributor) Usage(start, end time.Time) (record.GPUUsage, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var u record.GPUUsage
	var covered, powerMWs, utilS float64 // seconds, mW·s, %·s
	n := a.len()
	// Skip intervals that end before start: polls are in time order.
	lo, hi := 0, n-1
	for lo < hi {
		mid := (lo + hi) / 2
		if a.at(mid + 1).t.Before(start) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	for i := lo; i+1 < n; i++ {
		p0, p1 := a.at(i), a.at(i+1)
		if !p0.t.Before(end) {
			break
		}
		dt := p1.t.Sub(p0.t).Seconds()
		ov := overlap(p0.t, p1.t, start, end)
		if dt <= 0 || ov <= 0 {
			continue
		}
		var joules, powerMW, util float64
		gpus, utilN := 0, 0
		for k := range p1.gpus {
			g1 := &p1.gpus[k]
			g0 := findReading(p0.gpus, k, g1.index)
			if g0 == nil {
				continue
			}
			gpus++
			both := g0.valid & g1.valid
			switch {
			case both&gpu.FieldEnergy != 0 && g1.energyMJ >= g0.energyMJ:
				joules += float64(g1.energyMJ-g0.energyMJ) / 1e3
			case both&gpu.FieldPower != 0:
				joules += (float64(g0.powerMW) + float64(g1.powerMW)) / 2e3 * dt
			}
			if both&gpu.FieldPower != 0 {
				powerMW += (float64(g0.powerMW) + float64(g1.powerMW)) / 2
			}
			if both&gpu.FieldUtil != 0 {
				util += (float64(g0.util) + float64(g1.util)) / 2
				utilN++
			}
		}
		if gpus == 0 {
			continue
		}
		u.GPUs = max(u.GPUs, gpus)
		covered += ov
		powerMWs += powerMW * ov
		if utilN > 0 {
			utilS += util / float64(utilN) * ov
		}
		share := max((p0.inFlight+p1.inFlight)/2, 1)
		u.EnergyJ += joules * (ov / dt) / share
		u.GPUSeconds += float64(gpus) * ov / share
	}
	if covered <= 0 {
		return record.GPUUsage{}, false
	}
	u.CoveredMs = covered * 1e3
	u.PowerW = powerMWs / covered / 1e3
	u.UtilPercent = utilS / covered
	return u, true
}

// findReading returns the reading of GPU index in rs, trying position k first (polls list the GPUs
// in the same order).
func findReading(rs []reading, k, index int) *reading {
	if k < len(rs) && rs[k].index == index {
		return &rs[k]
	}
	for i := range rs {
		if rs[i].index == index {
			return &rs[i]
		}
	}
	return nil
}

// overlap is the length in seconds of [a0, a1] ∩ [b0, b1].
func overlap(a0, a1, b0, b1 time.Time) float64 {
	lo, hi := a0, a1
	if b0.After(lo) {
		lo = b0
	}
	if b1.Before(hi) {
		hi = b1
	}
	if !hi.After(lo) {
		return 0
	}
	return hi.Sub(lo).Seconds()
}

// Enrich sets r.GPU from the polls covering the request's lifetime (start to response
// complete); it leaves r.GPU nil when none does. It is a record pipeline enricher.
func (a *Attributor) Enrich(r *record.Record) {
	if r.Start.IsZero() {
		return
	}
	end := r.Start.Add(msDur(r.DurationMs))
	if u, ok := a.Usage(r.Start, end); ok {
		r.GPU = &u
		if p := a.price.Load(); p != nil && *p > 0 {
			r.Cost = GPUCost(&u, *p, r.InputTokens+r.OutputTokens)
		}
	}
}

// SetPrice sets the price of one GPU-hour (in any currency unit; 0 for none) that Enrich
// turns a record's GPU-seconds into its cost with.
func (a *Attributor) SetPrice(perGPUHour float64) { a.price.Store(&perGPUHour) }

// GPUCost is the cost of a request's GPU time at perGPUHour, and per million of its tokens.
func GPUCost(u *record.GPUUsage, perGPUHour float64, tokens int64) *record.Cost {
	return record.NewCost(u.GPUSeconds/3600*perGPUHour, record.BasisGPUHour, tokens)
}
