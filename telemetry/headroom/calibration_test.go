package headroom

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// calibrate runs the long calibration (300 seeds a scenario, truth runs ten times longer) and
// prints the table of docs/headroom.md:
//
//	go test -count=1 -timeout 30m ./telemetry/headroom/ -run TestHeadroomCalibration -calibrate
//
// (the package before -calibrate: go test passes an unknown flag and everything after it to the
// test binary)
var (
	calibrate = flag.Bool("calibrate", false, "run the long headroom calibration and print the docs table")
	simSeeds  = flag.Int("headroom.seeds", 100, "seeds per headroom calibration scenario")
)

const (
	simSlots    = 16
	simCapacity = simSlots / 1.0 // slots over the mean service time (1 s): requests/s
	simDuration = 300.0          // seconds: the estimator's default 30 windows of 10 s
)

// scenario is one simulated setting with its truth.
type scenario struct {
	name      string
	tr        traffic
	svc       service
	objective time.Duration
	truth     float64 // requests/s at which mean TTFT reaches the objective; NaN: not defined
	steady    bool    // a steady load below the truth: no knee should be reported
}

// steadyTTFT is the mean TTFT and the throughput of a long steady run (the first 10 % left
// out as warm-up).
func steadyTTFT(tr traffic, svc service, seed uint64) (ttft, rate float64) {
	reqs := simulate(tr, simSlots, svc, seed)
	var n, sum float64
	for _, q := range reqs {
		if q.arrival >= tr.Duration/10 {
			n++
			sum += q.ttft
		}
	}
	return sum / n, n / (tr.Duration * 0.9)
}

var (
	scenariosOnce sync.Once
	scenariosAll  []scenario
)

// scenarios builds the scenarios and their truths: the objective of an open scenario is the
// mean TTFT of its server at 80 % load (so the truth is 0.8 × capacity); the closed loops take
// the exponential server's, their truth is the throughput at the number of clients (linearly
// interpolated) where the mean TTFT reaches it.
func scenarios(long bool) []scenario {
	scenariosOnce.Do(func() {
		truthDur := 10000.0
		if long {
			truthDur = 100000.0
		}
		// The five long runs are independent: two at a time.
		var obj [3]float64
		var closed [2]float64
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		do := func(f func()) {
			wg.Add(1)
			sem <- struct{}{}
			go func() { defer wg.Done(); defer func() { <-sem }(); f() }()
		}
		for _, s := range []service{expService, detService, lognormalService} {
			do(func() {
				obj[s], _ = steadyTTFT(traffic{Open: true, Rate0: 0.8 * simCapacity, Rate1: 0.8 * simCapacity, Duration: truthDur}, s, 99)
			})
		}
		wg.Wait()
		for i, think := range []float64{0, 1} {
			do(func() { closed[i] = closedTruth(think, obj[expService], truthDur) })
		}
		wg.Wait()
		d := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
		for _, s := range []service{expService, detService, lognormalService} {
			scenariosAll = append(scenariosAll, scenario{
				name: fmt.Sprintf("open M/%v/16, load 20→90 %%", s),
				tr:   traffic{Open: true, Rate0: 0.2 * simCapacity, Rate1: 0.9 * simCapacity, Duration: simDuration},
				svc:  s, objective: d(obj[s]), truth: 0.8 * simCapacity,
			})
		}
		for i, think := range []float64{0, 1} {
			c0, c1 := 3, 22
			if think > 0 {
				c0, c1 = 7, 40
			}
			truth := closed[i]
			scenariosAll = append(scenariosAll, scenario{
				name: fmt.Sprintf("closed M/M/16, %d→%d clients, think %g s", c0, c1, think),
				tr:   traffic{Clients0: c0, Clients1: c1, Think: think, Duration: simDuration},
				svc:  expService, objective: d(obj[expService]), truth: truth,
			})
		}
		for _, s := range []service{expService, detService, lognormalService} {
			scenariosAll = append(scenariosAll, scenario{
				name: fmt.Sprintf("open M/%v/16, steady 50 %%", s),
				tr:   traffic{Open: true, Rate0: 0.5 * simCapacity, Rate1: 0.5 * simCapacity, Duration: simDuration},
				svc:  s, objective: d(obj[s]), truth: 0.8 * simCapacity, steady: true,
			})
		}
	})
	return scenariosAll
}

// closedTruth is the throughput of a closed loop of exponential servers with the given think
// time at the (interpolated) number of clients where its mean TTFT reaches objective.
func closedTruth(think, objective, dur float64) float64 {
	// Below half the slots no request waits, with or without think time: start there.
	prevT, prevX := 0.0, 0.0
	for k := simSlots / 2; k < 200; k++ {
		t, x := steadyTTFT(traffic{Clients0: k, Clients1: k, Think: think, Duration: dur / 5}, expService, uint64(1000+k))
		if t >= objective && k > simSlots/2 {
			f := (objective - prevT) / (t - prevT)
			return prevX + f*(x-prevX)
		}
		prevT, prevX = t, x
	}
	return math.NaN()
}

// runOutcome is one seed's published figure.
type runOutcome struct {
	state          string
	est, low, high float64 // requests/s; NaN where null (est, low), +Inf for high
}

func runScenario(sc scenario, seed uint64) runOutcome {
	clk := &clock{t: time.Unix(1e6, 0)}
	e := New(Options{Now: clk.now})
	e.rng = rand.New(rand.NewPCG(seed, 3))
	reqs := simulate(sc.tr, simSlots, sc.svc, seed)
	feedSim(e, clk, clk.t, reqs, sc.tr.Duration, sc.objective)
	ests := e.Estimates()
	if len(ests) != 1 {
		return runOutcome{state: "none", est: math.NaN(), low: math.NaN(), high: math.Inf(1)}
	}
	est := ests[0]
	v := func(p *float64, null float64) float64 {
		if p == nil {
			return null
		}
		return *p
	}
	x := est.SLORequestsPerSec
	return runOutcome{state: est.State, est: v(x.Estimate, math.NaN()), low: v(x.Low, math.NaN()), high: v(x.High, math.Inf(1))}
}

// calibrationRow is one scenario's figures over its seeds.
type calibrationRow struct {
	sc                                  scenario
	runs                                int
	knee, covered, aboveCap, aboveTruth int
	lowAboveTruth, bounded              int
	sumRelErr, sumWidthRel              float64
}

func (r calibrationRow) String() string {
	p := func(k int) string { return fmt.Sprintf("%d %%", int(math.Round(100*float64(k)/float64(r.runs)))) }
	bias := "–"
	if r.bounded > 0 {
		bias = fmt.Sprintf("%+.1f %%", 100*r.sumRelErr/float64(r.bounded))
	}
	width := "–"
	if r.bounded > 0 {
		width = fmt.Sprintf("%.0f %%", 100*r.sumWidthRel/float64(r.bounded))
	}
	return fmt.Sprintf("| %s | %.2f | %s | %s | %s | %s | %s | %s | %s |", r.sc.name, r.sc.truth, p(r.knee), bias, width, p(r.covered), p(r.aboveTruth), p(r.aboveCap), p(r.lowAboveTruth))
}

const calibrationHeader = "| scenario | truth (req/s) | knee reported | bias | interval width | 90 % interval covers | estimate > truth | estimate > capacity | low bound > truth |\n|---|---|---|---|---|---|---|---|---|"

func calibrateScenario(sc scenario, seeds int) calibrationRow {
	row := calibrationRow{sc: sc, runs: seeds}
	outs := make([]runOutcome, seeds)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for s := range seeds {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs[s] = runScenario(sc, uint64(s+1))
		}()
	}
	wg.Wait()
	for _, o := range outs {
		if o.state == "ok" {
			row.knee++
		}
		lo := o.low
		if math.IsNaN(lo) {
			lo = 0
		}
		if lo <= sc.truth && sc.truth <= o.high {
			row.covered++
		}
		if lo > sc.truth {
			row.lowAboveTruth++
		}
		if !math.IsNaN(o.est) {
			row.bounded++
			row.sumWidthRel += (min(o.high, 2*sc.truth) - lo) / sc.truth
			row.sumRelErr += o.est/sc.truth - 1
			if o.est > sc.truth {
				row.aboveTruth++
			}
			if o.est > simCapacity {
				row.aboveCap++
			}
		}
	}
	return row
}

// wilson is the Wilson score interval's bounds at 95 % for k successes of n.
func wilson(k, n int) (lo, hi float64) {
	const z = 1.96
	p, fn := float64(k)/float64(n), float64(n)
	c := (p + z*z/(2*fn)) / (1 + z*z/fn)
	h := z * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn)) / (1 + z*z/fn)
	return c - h, c + h
}

// TestHeadroomCalibration runs every scenario over 100 seeds and holds the targets of issue
// 30: in every ramp (open and closed) the 90 % interval covers the truth in at least 85 of
// 100 seeds; the estimate exceeds the server's capacity in at most 10; at a steady 50 % load
// at most 10 report a knee. The seeds are fixed, so the outcome is the same every run; what
// the counts allow about the model (the Wilson 95 % bounds) is logged. Against the hockey
// stick on concurrency this replaced it failed all three (coverage 0 % in the open ramps,
// 4 % with think time; estimate above capacity in 56–61 % of the M/M and M/G ramps; a knee
// in 92 % of the steady M/D runs). Before the estimate was capped by the rate delivered above
// the objective (delivered, rate.go), the closed loop without think time had its estimate above
// the capacity in 12 of 100 and its interval covering the truth in 87.
func TestHeadroomCalibration(t *testing.T) {
	seeds := *simSeeds
	if *calibrate && seeds == 100 {
		seeds = 300
	}
	t0 := time.Now()
	scs := scenarios(*calibrate)
	t.Logf("truths computed in %v", time.Since(t0).Round(time.Millisecond))
	var b strings.Builder
	b.WriteString(calibrationHeader + "\n")
	for _, sc := range scs {
		row := calibrateScenario(sc, seeds)
		b.WriteString(row.String() + "\n")
		if sc.steady {
			if lo, hi := wilson(seeds-row.knee, seeds); seeds-row.knee < seeds*90/100 {
				t.Errorf("%s: no knee in %d of %d seeds (95 %% bounds %.2f–%.2f), want at least 90 %%", sc.name, seeds-row.knee, seeds, lo, hi)
			} else {
				t.Logf("%s: no knee in %d of %d (95 %% bounds %.2f–%.2f)", sc.name, seeds-row.knee, seeds, lo, hi)
			}
		} else {
			if lo, hi := wilson(row.covered, seeds); row.covered < seeds*85/100 {
				t.Errorf("%s: the interval covers the truth in %d of %d seeds (95 %% bounds %.2f–%.2f), want at least 85 %%", sc.name, row.covered, seeds, lo, hi)
			} else {
				t.Logf("%s: covered in %d of %d (95 %% bounds %.2f–%.2f)", sc.name, row.covered, seeds, lo, hi)
			}
		}
		if lo, hi := wilson(row.aboveCap, seeds); row.aboveCap > seeds*10/100 {
			t.Errorf("%s: the estimate exceeds the capacity in %d of %d seeds (95 %% bounds %.2f–%.2f), want at most 10 %%", sc.name, row.aboveCap, seeds, lo, hi)
		} else {
			t.Logf("%s: estimate above the capacity in %d of %d (95 %% bounds %.2f–%.2f)", sc.name, row.aboveCap, seeds, lo, hi)
		}
	}
	t.Log("\n" + b.String())
	if *calibrate {
		fmt.Print(b.String())
	}
}
