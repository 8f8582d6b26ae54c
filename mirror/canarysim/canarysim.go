// Package canarysim is the seeded calibration of the canary verdict (mirror's Judge):
// it draws pairs of live and mirror measurements of known truth, shaped like real traffic,
// runs the verdict at every look as a polling gate would, and counts what it decides and
// when. Its tests hold the verdict's targets; docs/canary.md shows its table.
//
// The traffic: a chat-like output length per request (lognormal, median 200 tokens, σ 0.8 on
// the log scale, 1 … 2,048), the mirror's length correlated with live's (0.7 on the log scale,
// as sampling differs); TTFT lognormal at a coefficient of variation CV (median 100 ms) and ITL
// lognormal at half that spread (median 10 ms), the two sides of a pair correlated 0.5 on the
// log scale (the same prompt); 2 % of requests on each side, independently, 3–10× slower in
// TTFT and ITL; each upstream's speed drifting as a log-AR(1) with a memory of Memory
// requests (200 by default): a drift both share (the same traffic reaches both at the same
// time: its load) of SD Drift and one of each upstream's own of SD OwnDrift; bursts of 50
// requests 1.5× slower on both sides, one start per 500 requests; 0.5 % of requests failing on
// each side. Request latency is TTFT plus ITL per output token after
// the first.
package canarysim

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/llmtap/llmtap/mirror"
)

// Traffic is the shape of the simulated traffic.
type Traffic struct {
	// CV is the coefficient of variation of TTFT (ITL's is half of it on the log scale).
	CV float64
	// Drift is the SD of the slow drift of speed both upstreams share (0.10: 10 %), OwnDrift
	// that of each upstream's own drift.
	Drift, OwnDrift float64
	// Memory is the drifts' memory in requests (the AR(1) coefficient is exp(−1/Memory)); 0
	// is 200.
	Memory float64
}

// Effect is how the mirror differs from live (the truth).
type Effect struct {
	// TTFT and ITL multiply the mirror's TTFT and ITL (1.2: 20 % slower everywhere).
	TTFT, ITL float64
	// SlowFactor multiplies the slowdown of the mirror's 2 % slow requests (its p99 only).
	SlowFactor float64
	// ExtraShare of the mirror's requests are ExtraFactor times slower besides.
	ExtraShare, ExtraFactor float64
	// Errors is the share of the mirror's requests that fail besides the 0.5 % both sides
	// fail.
	Errors float64
}

// None is no difference.
var None = Effect{TTFT: 1, ITL: 1, SlowFactor: 1}

// ar is a log-AR(1) with stationary SD sd and a memory of mem steps.
type ar struct{ phi, innov, x float64 }

func newAR(rng *rand.Rand, sd, mem float64) *ar {
	phi := math.Exp(-1 / mem)
	return &ar{phi: phi, innov: sd * math.Sqrt(1-phi*phi), x: sd * rng.NormFloat64()}
}

func (a *ar) step(z float64) float64 { a.x = a.phi*a.x + a.innov*z; return a.x }

// Pairs draws n pairs of the traffic with the mirror changed by e.
func Pairs(rng *rand.Rand, n int, tr Traffic, e Effect) []mirror.Pair {
	sTTFT := math.Sqrt(math.Log1p(tr.CV * tr.CV))
	sITL := sTTFT / 2
	const rho, lenRho, slow, fail, burstLen, burstEvery = 0.5, 0.7, 0.02, 0.005, 50, 500
	mem := tr.Memory
	if mem <= 0 {
		mem = 200
	}
	dc, dl, dm := newAR(rng, tr.Drift, mem), newAR(rng, tr.OwnDrift, mem), newAR(rng, tr.OwnDrift, mem)
	burst := 0
	out := make([]mirror.Pair, n)
	for i := range out {
		common := dc.step(rng.NormFloat64())
		driftL, driftM := math.Exp(common+dl.step(rng.NormFloat64())), math.Exp(common+dm.step(rng.NormFloat64()))
		if burst > 0 {
			burst--
		} else if rng.Float64() < 1.0/burstEvery {
			burst = burstLen
		}
		load := 1.0
		if burst > 0 {
			load = 1.5
		}
		zLen := rng.NormFloat64()
		zT, zI := rng.NormFloat64(), rng.NormFloat64()
		draw := func(drift float64, isMirror bool) mirror.Side {
			if rng.Float64() < fail {
				return mirror.Side{}
			}
			if isMirror && e.Errors > 0 && rng.Float64() < e.Errors {
				return mirror.Side{}
			}
			zl := lenRho*zLen + math.Sqrt(1-lenRho*lenRho)*rng.NormFloat64()
			tokens := math.Round(min(2048, max(1, 200*math.Exp(0.8*zl))))
			t := 100 * math.Exp(sTTFT*(math.Sqrt(rho)*zT+math.Sqrt(1-rho)*rng.NormFloat64())) * drift * load
			it := 10 * math.Exp(sITL*(math.Sqrt(rho)*zI+math.Sqrt(1-rho)*rng.NormFloat64())) * drift * load
			f := 1.0
			if rng.Float64() < slow {
				f = 3 + 7*rng.Float64()
				if isMirror {
					f *= e.SlowFactor
				}
			}
			if isMirror {
				if rng.Float64() < e.ExtraShare {
					f *= e.ExtraFactor
				}
				t, it = t*e.TTFT, it*e.ITL
			}
			t, it = t*f, it*f
			lat := t + (tokens-1)*it
			s := mirror.Side{OK: true, TTFTMs: &t, LatencyMs: &lat, OutputTokens: &tokens}
			if tokens > 1 {
				s.ITLMs = &it
			}
			return s
		}
		out[i] = mirror.Pair{Model: "m", Live: draw(driftL, false), Mirror: draw(driftM, true)}
	}
	return out
}

// Outcome is what one run of the gate decided.
type Outcome struct {
	// Verdict is the first decision (not "not enough pairs yet") a gate polling every look
	// read, or inconclusive, or "not enough pairs yet" when the run ended first.
	Verdict string
	// Pairs is the look's pair count at that decision (0 when none).
	Pairs int
	// At is the verdict at each look the run reached, by its pair count (a poller that does
	// not stop at the first decision reads them all).
	At map[int]string
}

// Run draws the pairs of one run up to maxPairs (at most the verdict's last look) and takes
// the verdict at every look.
func Run(rng *rand.Rand, tr Traffic, e Effect, o mirror.VerdictOptions, maxPairs int) Outcome {
	pairs := Pairs(rng, min(maxPairs, o.MaxPairs()), tr, e)
	out := Outcome{Verdict: mirror.VerdictNotEnough, At: map[int]string{}}
	for k := 0; o.LookAt(k) <= len(pairs); k++ {
		v := mirror.Judge(pairs[:o.LookAt(k)], o)
		out.At[v.Pairs] = v.Outcome
		if out.Pairs == 0 && v.Outcome != mirror.VerdictNotEnough {
			out.Verdict, out.Pairs = v.Outcome, v.Pairs
		}
		if v.NextLookAt == 0 {
			break
		}
	}
	return out
}

// Tally is the outcomes of runs.
type Tally []Outcome

// Simulate runs runs runs of the traffic and effect with seed, each up to maxPairs pairs.
func Simulate(seed uint64, runs int, tr Traffic, e Effect, o mirror.VerdictOptions, maxPairs int) Tally {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	t := make(Tally, runs)
	for i := range t {
		t[i] = Run(rng, tr, e, o, maxPairs)
	}
	return t
}

// First is the number of runs whose first decision was one of verdicts, taken by n pairs (n
// 0: whenever).
func (t Tally) First(n int, verdicts ...string) int {
	k := 0
	for _, out := range t {
		if slices.Contains(verdicts, out.Verdict) && (n == 0 || out.Pairs <= n) {
			k++
		}
	}
	return k
}

// Ever is the number of runs that read one of verdicts at some look by n pairs (n 0: at any
// look): what a poller that never stops could see.
func (t Tally) Ever(n int, verdicts ...string) int {
	k := 0
	for _, out := range t {
		for at, v := range out.At {
			if slices.Contains(verdicts, v) && (n == 0 || at <= n) {
				k++
				break
			}
		}
	}
	return k
}

// AtLook is the number of runs whose verdict at the look of n pairs was one of verdicts.
func (t Tally) AtLook(n int, verdicts ...string) int {
	k := 0
	for _, out := range t {
		if slices.Contains(verdicts, out.At[n]) {
			k++
		}
	}
	return k
}

// MedianPairs is the median look at which the runs whose first decision was one of verdicts
// decided (0 when none did).
func (t Tally) MedianPairs(verdicts ...string) int {
	var ns []int
	for _, out := range t {
		if slices.Contains(verdicts, out.Verdict) {
			ns = append(ns, out.Pairs)
		}
	}
	if len(ns) == 0 {
		return 0
	}
	slices.Sort(ns)
	return ns[(len(ns)-1)/2]
}
