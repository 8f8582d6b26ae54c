package fidelity

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// synth makes n records with Poisson arrivals (rate 50/s), exponential-tailed TTFT around
// ttft ms, fixed ITL and tokens; errors marks every k-th one failed (0: none).
func synth(seed uint64, n int, ttft float64, errors int) []*record.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	t0 := time.Unix(1_700_000_000, 0)
	at := time.Duration(0)
	out := make([]*record.Record, n)
	for i := range out {
		at += time.Duration(rng.ExpFloat64() / 50 * float64(time.Second))
		f := ttft * (1 + 0.1*rng.ExpFloat64())
		itl := 20 + rng.Float64()
		lat := f + 7*itl
		r := &record.Record{Start: t0.Add(at), InputTokens: 100 + int64(rng.IntN(50)), OutputTokens: 8,
			TTFTMs: &f, ITLMs: &itl, RequestLatencyMs: &lat}
		if errors > 0 && i%errors == 0 {
			r.Error = "http_500"
		}
		out[i] = r
	}
	return out
}

// TestJudge: two samples of one process are reproduced; a TTFT 50 % longer is not, and the
// verdict names TTFT; a tenth of the requests failing is not, naming the error rate; twenty
// requests are not enough; prefix reuse is compared only when both sides have hash ids.
func TestJudge(t *testing.T) {
	rec := Side{Name: "rec", Where: "proxy", Records: synth(1, 1200, 100, 0)}
	for _, tc := range []struct {
		name, outcome, diverged string
		rep                     []*record.Record
	}{
		{"same process", Reproduced, "", synth(2, 1200, 100, 0)},
		{"slower TTFT", NotReproduced, "ttft_ms", synth(2, 1200, 150, 0)},
		{"errors", NotReproduced, "error_rate", synth(2, 1200, 100, 10)},
		{"too few", NotEnough, "", synth(2, 20, 100, 0)},
	} {
		v := Judge(rec, Side{Name: "rep", Where: "proxy", Records: tc.rep}, Options{})
		var b bytes.Buffer
		if err := v.Write(&b); err != nil {
			t.Fatal(err)
		}
		if v.Outcome != tc.outcome || !strings.HasPrefix(v.Diverged, tc.diverged) {
			t.Errorf("%s: %s, diverged most %q; want %s, %q\n%s", tc.name, v.Outcome, v.Diverged, tc.outcome, tc.diverged, b.String())
		}
		if !strings.Contains(b.String(), "both sides measured at the proxy") || !strings.Contains(b.String(), "not compared: prefix reuse") {
			t.Errorf("%s: the output does not say where the sides were measured or that prefix reuse was not compared:\n%s", tc.name, b.String())
		}
	}

	// Prefix reuse: the recording reuses half its blocks (a shared two-block prefix), a replay with fresh blocks none.
	ids := func(reuse bool) [][]int64 {
		out := make([][]int64, 1200)
		for i := range out {
			if reuse {
				out[i] = []int64{1, 2, int64(2*i + 10), int64(2*i + 11)}
			} else {
				out[i] = []int64{int64(4*i + 10_000), int64(4*i + 10_001), int64(4*i + 10_002), int64(4*i + 10_003)}
			}
		}
		return out
	}
	r := rec
	r.HashIDs = ids(true)
	same := Side{Where: "client", Records: synth(2, 1200, 100, 0), HashIDs: ids(true)}
	v := Judge(r, same, Options{})
	if v.Outcome != Reproduced || !strings.Contains(v.Measured, "replay at the client") {
		t.Errorf("same prefix reuse: %s (%s)", v.Outcome, v.Measured)
	}
	fresh := same
	fresh.HashIDs = ids(false)
	if v := Judge(r, fresh, Options{}); v.Outcome != NotReproduced || v.Diverged != "prefix_reuse" {
		t.Errorf("no prefix reuse in the replay: %s, diverged most %s", v.Outcome, v.Diverged)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	bad := Options{Margin: 1.5, MinRateCorr: -0.1, Speedup: -1}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "margin 1.5") || !strings.Contains(err.Error(), "min-rate-corr") || !strings.Contains(err.Error(), "speedup -1") {
		t.Errorf("bad options: %v", err)
	}
}

// TestArrivalShape: a replay that sends the recording's requests at an even rate, where the
// recording had a burst, differs in its rate over time (and in burstiness); the same schedule
// with counting noise does not.
func TestArrivalShape(t *testing.T) {
	at := func(rs []*record.Record, f func(i int) time.Duration) []*record.Record {
		t0 := time.Unix(1_700_000_000, 0)
		out := make([]*record.Record, len(rs))
		for i, r := range rs {
			c := *r
			c.Start = t0.Add(f(i))
			out[i] = &c
		}
		return out
	}
	base := synth(1, 600, 100, 0)
	burst := at(base, func(i int) time.Duration {
		if i < 400 {
			return time.Duration(i) * 2500 * time.Microsecond // 400 in the first second
		}
		return time.Second + time.Duration(i-400)*15*time.Millisecond // 200 over the next three
	})
	jitter := at(base, func(i int) time.Duration {
		return burst[i].Start.Sub(burst[0].Start) + time.Duration(i%7)*time.Millisecond
	})
	even := at(base, func(i int) time.Duration { return time.Duration(i) * 4 * time.Second / 600 })
	row := func(v Verdict, name string) Comparison {
		for _, c := range v.Comparisons {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no %s", name)
		return Comparison{}
	}
	rec := Side{Where: "proxy", Records: burst}
	if c := row(Judge(rec, Side{Where: "proxy", Records: jitter}, Options{}), "arrival_rate_corr"); c.Outcome != "same" {
		t.Errorf("the same schedule with lag: rate correlation %v, %s", c.Other, c.Outcome)
	}
	v := Judge(rec, Side{Where: "proxy", Records: even}, Options{})
	if c := row(v, "arrival_rate_corr"); c.Outcome != "better" || v.Outcome != NotReproduced || !strings.HasPrefix(v.Diverged, "arrival_") {
		t.Errorf("an even replay of a burst: rate correlation %v %s, verdict %s (diverged most %s)", c.Other, c.Outcome, v.Outcome, v.Diverged)
	}
}

// sessions makes n two-turn sessions: first turns Poisson at 20/s, each 50 ms long, the second
// turn after a think time uniform in [0.8, 1.2] × think ms.
func sessions(seed uint64, n int, think float64) []*record.Record {
	rng := rand.New(rand.NewPCG(seed, 2))
	t0 := time.Unix(1_700_000_000, 0)
	at := time.Duration(0)
	var out []*record.Record
	for i := range n {
		at += time.Duration(rng.ExpFloat64() / 20 * float64(time.Second))
		sid := fmt.Sprintf("s%d", i)
		first := &record.Record{Start: t0.Add(at), SessionID: sid, DurationMs: 50}
		wait := think * (0.8 + 0.4*rng.Float64())
		second := &record.Record{Start: first.Start.Add(time.Duration((50 + wait) * float64(time.Millisecond))), SessionID: sid, DurationMs: 50}
		out = append(out, first, second)
	}
	return out
}

// TestThinkTime: the think times of two samples of one process are the same at the median and
// 90th percentile; think times 50 % longer are not reproduced and named; a replay at speedup 2,
// whose think times are halved, is the same once its clock is scaled; runs without sessions say
// think time was not compared.
func TestThinkTime(t *testing.T) {
	rec := Side{Where: "proxy", Records: sessions(1, 800, 200)}
	get := func(v Verdict, name string) Comparison {
		for _, c := range v.Comparisons {
			if c.Name == name {
				return c
			}
		}
		t.Fatalf("no %s in %v (not compared: %v)", name, v.Comparisons, v.NotCompared)
		return Comparison{}
	}
	for _, q := range []string{"p50", "p90"} {
		if c := get(Judge(rec, Side{Where: "proxy", Records: sessions(2, 800, 200)}, Options{}), "think_time_ms "+q); c.Outcome != "same" {
			t.Errorf("same think times, %s: %s (ratio %v, [%v, %v])", q, c.Outcome, c.Estimate, c.Low, c.High)
		}
		if c := get(Judge(rec, Side{Where: "proxy", Records: sessions(2, 800, 100)}, Options{Speedup: 2}), "think_time_ms "+q); c.Outcome != "same" {
			t.Errorf("think times halved at speedup 2, %s: %s (ratio %v, [%v, %v])", q, c.Outcome, c.Estimate, c.Low, c.High)
		}
	}
	v := Judge(rec, Side{Where: "proxy", Records: sessions(2, 800, 300)}, Options{})
	if v.Outcome != NotReproduced || !strings.HasPrefix(v.Diverged, "think_time_ms") {
		t.Errorf("think times 50 %% longer: %s, diverged most %q; want not reproduced, think_time_ms", v.Outcome, v.Diverged)
	}
	v = Judge(Side{Where: "proxy", Records: synth(1, 100, 100, 0)}, Side{Where: "proxy", Records: synth(2, 100, 100, 0)}, Options{})
	if !strings.Contains(strings.Join(v.NotCompared, "; "), "session think time") {
		t.Errorf("runs without sessions: not compared %v, want session think time listed", v.NotCompared)
	}
}
