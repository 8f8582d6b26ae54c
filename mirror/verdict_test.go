package mirror

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// side draws one request's measurements: TTFT lognormal around ttft ms (σ 0.15 on the log
// scale), ITL around 5 ms, latency = TTFT + 64 tokens of ITL, 64 output tokens.
func side(rng *rand.Rand, ttft, itl float64, ok bool) Side {
	if !ok {
		return Side{}
	}
	t := ttft * math.Exp(0.15*rng.NormFloat64())
	i := itl * math.Exp(0.1*rng.NormFloat64())
	l := t + 63*i
	n := 64.0
	return Side{OK: true, TTFTMs: &t, ITLMs: &i, LatencyMs: &l, OutputTokens: &n}
}

// stream draws n pairs: live from the base distributions, mirror from them changed by f.
func stream(rng *rand.Rand, n int, f func(rng *rand.Rand, live Side) Side) []Pair {
	out := make([]Pair, n)
	for i := range out {
		live := side(rng, 50, 5, true)
		out[i] = Pair{Model: "m", Live: live, Mirror: f(rng, side(rng, 50, 5, true))}
	}
	return out
}

// sequential runs every look of the schedule over pairs and returns the first look's verdict
// that is not "not enough pairs yet" and the look it came at (-1 if none).
func sequential(pairs []Pair, o VerdictOptions) (Verdict, int) {
	var v Verdict
	for k := range o.withDefaults().Looks {
		if len(pairs) < o.LookAt(k) {
			break
		}
		v = Judge(pairs[:o.LookAt(k)], o)
		if v.Outcome != VerdictNotEnough {
			return v, k
		}
	}
	return v, -1
}

// TestVerdictFalseAlarms: with two identical upstreams, a gate that looks at every look (the
// most a poller can see) declares a difference in at most Alpha of the runs. 200 runs of up
// to 3,200 pairs each; the bound allows Alpha plus three binomial standard errors.
func TestVerdictFalseAlarms(t *testing.T) {
	t.Parallel()
	o := VerdictOptions{Looks: 5}
	rng := rand.New(rand.NewPCG(1, 1))
	const runs = 200
	alarms, same := 0, 0
	for range runs {
		pairs := stream(rng, o.MaxPairs(), func(rng *rand.Rand, m Side) Side { return m })
		v, _ := sequential(pairs, o)
		switch v.Outcome {
		case VerdictWorse, VerdictBetter:
			alarms++
		case VerdictSame, VerdictNotWorse:
			same++
		}
	}
	bound := DefaultVerdictAlpha*runs + 3*math.Sqrt(DefaultVerdictAlpha*(1-DefaultVerdictAlpha)*runs)
	t.Logf("identical upstreams: %d of %d runs declared a difference (bound %.1f), %d reached same", alarms, runs, bound, same)
	if float64(alarms) > bound {
		t.Errorf("%d false alarms in %d runs, more than alpha allows (%.1f)", alarms, runs, bound)
	}
	if same < runs*9/10 {
		t.Errorf("only %d of %d runs of identical upstreams reached \"same\" or \"not worse\" within 3,200 pairs", same, runs)
	}
}

// TestVerdictFalseAlarmsAtTheMargin: the hardest case for the gate's bound is a mirror exactly
// at the margin (every time 10 % longer): "not worse" (or same, better) is then false, and a
// gate looking at every look declares it in at most Alpha of the runs. Seen failing with the
// upper ends at 4 × their level (no correction for looks): 21 of 200.
func TestVerdictFalseAlarmsAtTheMargin(t *testing.T) {
	t.Parallel()
	o := VerdictOptions{Looks: 5}
	rng := rand.New(rand.NewPCG(2, 2))
	const runs = 200
	alarms := 0
	for range runs {
		pairs := stream(rng, o.MaxPairs(), func(rng *rand.Rand, m Side) Side {
			t, i, l := *m.TTFTMs*1.10, *m.ITLMs*1.10, *m.LatencyMs*1.10
			m.TTFTMs, m.ITLMs, m.LatencyMs = &t, &i, &l
			return m
		})
		for k := range o.Looks {
			if v := Judge(pairs[:o.LookAt(k)], o).Outcome; v == VerdictNotWorse || v == VerdictSame || v == VerdictBetter {
				alarms++
				break
			}
		}
	}
	bound := DefaultVerdictAlpha*runs + 3*math.Sqrt(DefaultVerdictAlpha*(1-DefaultVerdictAlpha)*runs)
	t.Logf("a mirror exactly at the margin: %d of %d runs let it through (bound %.1f)", alarms, runs, bound)
	if float64(alarms) > bound {
		t.Errorf("%d false alarms in %d runs, more than alpha allows (%.1f)", alarms, runs, bound)
	}
}

// TestVerdictSees: a mirror 20 % slower, one 20 % slower in ITL alone, one equal in median with
// a worse tail, one with more errors and one offset by a constant 0.2 ms each get the verdict
// they should, naming the metric that diverged.
func TestVerdictSees(t *testing.T) {
	o := VerdictOptions{Looks: 5}
	for _, tc := range []struct {
		name, want, diverged string
		f                    func(rng *rand.Rand, m Side) Side
	}{
		{"20% slower", VerdictWorse, "", func(rng *rand.Rand, m Side) Side {
			t, l := *m.TTFTMs*1.2, *m.LatencyMs*1.2
			m.TTFTMs, m.LatencyMs = &t, &l
			return m
		}},
		{"ITL 5 to 6 ms", VerdictWorse, "itl_ms", func(rng *rand.Rand, m Side) Side {
			i := *m.ITLMs * 1.2
			m.ITLMs = &i
			return m
		}},
		{"worse tail", VerdictWorse, "p99", func(rng *rand.Rand, m Side) Side {
			if rng.Float64() < 0.03 {
				t := *m.TTFTMs * 4
				m.TTFTMs = &t
			}
			return m
		}},
		{"more errors", VerdictWorse, "error_rate", func(rng *rand.Rand, m Side) Side {
			if rng.Float64() < 0.05 {
				return Side{}
			}
			return m
		}},
		{"0.2 ms offset", VerdictSame, "", func(rng *rand.Rand, m Side) Side {
			t := *m.TTFTMs + 0.2
			m.TTFTMs = &t
			return m
		}},
		{"faster", VerdictBetter, "", func(rng *rand.Rand, m Side) Side {
			t, l := *m.TTFTMs*0.7, *m.LatencyMs*0.7
			m.TTFTMs, m.LatencyMs = &t, &l
			return m
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 7))
			pairs := stream(rng, o.MaxPairs(), tc.f)
			v, look := sequential(pairs, o)
			if strings.Contains(tc.diverged, "p99") {
				// A tail alarm makes a verdict worse but never holds one back: the gate may
				// pass before the tail is bounded; the last look sees it.
				v, look = Judge(pairs, o), o.Looks-1
			}
			t.Logf("%s: %s at look %d", tc.name, v, look)
			if v.Outcome != tc.want {
				for _, c := range v.Comparisons {
					t.Logf("  %s: live %.3f mirror %.3f estimate %.3f [%.3f, %.3f] %s", c.Name, c.Base, c.Other, c.Estimate, c.Low, c.High, c.Outcome)
				}
				t.Fatalf("verdict %q, want %q", v.Outcome, tc.want)
			}
			if tc.diverged != "" && !strings.Contains(v.Diverged, tc.diverged) {
				t.Errorf("diverged %q, want it to name %q", v.Diverged, tc.diverged)
			}
		})
	}
}

// TestVerdictsTakenAtLooks: the Pairer keeps each model's pairs, takes the verdict when a look
// is reached and keeps it until the next, whatever is read in between.
func TestVerdictsTakenAtLooks(t *testing.T) {
	p := NewPairer(0, 0)
	p.SetVerdict("http://canary", VerdictOptions{FirstLook: 10, Looks: 2})
	feed := func(from, to int) {
		for i := from; i < to; i++ {
			id := string(rune('a'+i%26)) + strings.Repeat("x", i)
			p.Expect(id)
			p.Consume(rec(id, record.ClassLive, "m", 10, 1, 20, ""))
			p.Consume(rec(id, record.ClassMirror, "m", 10, 1, 20, ""))
		}
	}
	feed(0, 9)
	if v := p.Verdicts(); len(v) != 1 || v[0].Look != 0 || v[0].NextLookAt != 10 || v[0].Outcome != VerdictNotEnough {
		t.Fatalf("before the first look: %+v", v)
	}
	feed(9, 15)
	v := p.Verdicts()
	if v[0].Look != 1 || v[0].Pairs != 10 || v[0].NextLookAt != 20 {
		t.Fatalf("after 15 pairs: look %d over %d pairs, next at %d; want look 1 over 10, next at 20", v[0].Look, v[0].Pairs, v[0].NextLookAt)
	}
	feed(15, 40)
	v = p.Verdicts()
	if v[0].Look != 2 || v[0].Pairs != 20 || v[0].NextLookAt != 0 {
		t.Fatalf("after 40 pairs: look %d over %d pairs, next at %d; want the last look over 20", v[0].Look, v[0].Pairs, v[0].NextLookAt)
	}
	// The same settings again keep the verdict; another upstream starts afresh.
	p.SetVerdict("http://canary", VerdictOptions{FirstLook: 10, Looks: 2})
	if v = p.Verdicts(); len(v) != 1 || v[0].Pairs != 20 {
		t.Fatalf("after setting the same verdict again: %+v", v)
	}
	p.SetVerdict("http://canary-2", VerdictOptions{FirstLook: 10, Looks: 2})
	if v = p.Verdicts(); len(v) != 0 {
		t.Fatalf("after a new upstream: %+v, want no verdict", v)
	}
}

// TestVerdictJSON: unbounded interval ends travel as null and come back infinite.
func TestVerdictJSON(t *testing.T) {
	in := MetricVerdict{Name: "ttft_ms p99", Base: 1, Other: 2, Estimate: 2, Low: 1.5, High: math.Inf(1), Count: 9, Outcome: VerdictNotEnough}
	b, err := json.Marshal(in)
	if err != nil || !strings.Contains(string(b), `"high":null`) {
		t.Fatalf("%s %v", b, err)
	}
	var out MetricVerdict
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip: %+v %v, want %+v", out, err, in)
	}
}

// TestVerdictInconclusiveAtTheLastLook: a verdict still undecided at the last look is
// inconclusive (final: later pairs are not used), while the same pairs at an earlier look are
// "not enough pairs yet". 10 pairs cannot bound the error rates' difference within the margin
// (its variance is at least that of one error more on each side), so it stays undecided
// whatever the data.
func TestVerdictInconclusiveAtTheLastLook(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pairs := stream(rng, 10, func(_ *rand.Rand, s Side) Side { return s })
	last := Judge(pairs, VerdictOptions{FirstLook: 10, Looks: 1})
	if last.Outcome != VerdictInconclusive || last.Look != 1 || last.NextLookAt != 0 {
		t.Errorf("10 pairs at the only look: %s (look %d, next at %d), want inconclusive", last.Outcome, last.Look, last.NextLookAt)
	}
	early := Judge(pairs, VerdictOptions{FirstLook: 10, Looks: 3})
	if early.Outcome != VerdictNotEnough || early.NextLookAt != 20 {
		t.Errorf("10 pairs at the first of three looks: %s (next at %d), want not enough pairs yet, next at 20", early.Outcome, early.NextLookAt)
	}
	undecided := false
	for _, m := range last.Comparisons {
		undecided = undecided || (m.Name == "error_rate" && m.Outcome == VerdictNotEnough)
	}
	if !undecided {
		t.Errorf("the error rates decided at 10 pairs: %+v", last.Comparisons)
	}
}

// TestReloadStartsPairsAfresh: a new mirror upstream empties the window of pairs the summary
// is over, so its figures never mix the old mirror with the new; the same upstream again
// keeps them. Seen failing before SetVerdict emptied the window (pairs 5 after the change).
func TestReloadStartsPairsAfresh(t *testing.T) {
	p := NewPairer(0, 0)
	p.SetVerdict("http://a", VerdictOptions{})
	for i := range 5 {
		id := strings.Repeat("y", i+1)
		p.Expect(id)
		p.Consume(rec(id, record.ClassLive, "m", 10, 1, 20, ""))
		p.Consume(rec(id, record.ClassMirror, "m", 10, 1, 20, ""))
	}
	p.SetVerdict("http://a", VerdictOptions{})
	if n := len(p.Pairs()); n != 5 {
		t.Fatalf("the same upstream again: %d pairs in the window, want 5", n)
	}
	p.SetVerdict("http://b", VerdictOptions{})
	if n := len(p.Pairs()); n != 0 || len(p.Summary().Models) != 0 {
		t.Fatalf("a new upstream: %d pairs in the window, want none", n)
	}
}
