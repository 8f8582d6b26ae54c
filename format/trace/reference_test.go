package trace

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// sharedTraces is the folder of published traces the repository carries (testdata/README.md
// says where each comes from and under which licence).
const sharedTraces = "../../testdata/traces"

// sharedTrace returns the path of a carried trace; a missing one fails the test: the repository
// carries every trace its tests read.
func sharedTrace(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedTraces, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("trace missing from the repository's testdata: %v", err)
	}
	return p
}

// near asserts that got rounds to want at the precision the README prints: within half a unit
// of the last printed digit.
func near(t *testing.T, what string, got, want, unit float64) {
	t.Helper()
	if math.Abs(got-want) > unit/2 {
		t.Errorf("%s = %.6g, README says %g (±%g)", what, got, want, unit/2)
	}
}

// TestReferenceStatistics reproduces every figure of testdata/README.md's reference table
// and the prefix-reuse and distinct-timestamp figures of its text, at the printed precision.
func TestReferenceStatistics(t *testing.T) {
	t.Parallel()
	type ref struct {
		rate, rateUnit              float64
		inMean, inP50, inP99        float64
		outMean, outP50, outP99     float64
		outMeanUnit, outP99Unit, cv float64
		requests, distinct          int
		reuse                       float64 // percent with one decimal; 0 = no hash ids
		format                      Format
	}
	cases := map[string]ref{
		"azure2023/AzureLLMInferenceTrace_code.csv": {rate: 2.566, rateUnit: 0.001, inMean: 2048, inP50: 1469, inP99: 7436,
			outMean: 27.9, outP50: 13, outP99: 251, outMeanUnit: 0.1, outP99Unit: 1, cv: 13.15, requests: 8819, distinct: 8819, format: FormatAzure},
		"azure2023/AzureLLMInferenceTrace_conv.csv": {rate: 5.530, rateUnit: 0.001, inMean: 1155, inP50: 1020, inP99: 4142,
			outMean: 211.1, outP50: 129, outP99: 601, outMeanUnit: 0.1, outP99Unit: 1, cv: 1.09, requests: 19366, distinct: 19366, format: FormatAzure},
		"mooncake/conversation_trace.jsonl": {rate: 3.401, rateUnit: 0.001, inMean: 12035, inP50: 6909, inP99: 85400,
			outMean: 342.6, outP50: 350, outP99: 1118.5, outMeanUnit: 0.1, outP99Unit: 0.1, cv: 3.03, requests: 12031, distinct: 1180, reuse: 36.6, format: FormatMooncake},
		"mooncake/synthetic_trace.jsonl": {rate: 3.906, rateUnit: 0.001, inMean: 15325, inP50: 11587, inP99: 66456,
			outMean: 149.1, outP50: 69, outP99: 768, outMeanUnit: 0.1, outP99Unit: 1, cv: 1.01, requests: 3993, distinct: 3982, reuse: 64.0, format: FormatMooncake},
	}
	for rel, want := range cases {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			reqs, info, err := ReadFile(sharedTrace(t, rel), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if info.Format != want.format || info.Torn != 0 || info.Skipped != 0 {
				t.Errorf("info %+v: want format %s, nothing torn or skipped", info, want.format)
			}
			s := summarize(reqs)
			if s.Requests != want.requests {
				t.Errorf("requests = %d, want %d", s.Requests, want.requests)
			}
			if s.Failures != 0 {
				t.Errorf("failures = %d in a trace without failure marks", s.Failures)
			}
			near(t, "rate", s.Rate, want.rate, want.rateUnit)
			near(t, "input mean", s.Input.Mean, want.inMean, 1)
			near(t, "input p50", s.Input.P50, want.inP50, 1)
			near(t, "input p99", s.Input.P99, want.inP99, 1)
			near(t, "output mean", s.Output.Mean, want.outMean, want.outMeanUnit)
			near(t, "output p50", s.Output.P50, want.outP50, 1)
			near(t, "output p99", s.Output.P99, want.outP99, want.outP99Unit)
			near(t, "IAT CV", s.IATCV, want.cv, 0.01)
			// The conversation trace's slotting (README: 1,180 distinct timestamps) is a count.
			if rel == "mooncake/conversation_trace.jsonl" && s.DistinctTimestamps != want.distinct {
				t.Errorf("distinct timestamps = %d, README says %d", s.DistinctTimestamps, want.distinct)
			}
			if want.reuse == 0 {
				if s.HashBlocks != 0 || s.PrefixReuse != 0 {
					t.Errorf("a trace without hash ids reports %d blocks, reuse %g", s.HashBlocks, s.PrefixReuse)
				}
			} else {
				near(t, "prefix reuse %", 100*s.PrefixReuse, want.reuse, 0.1)
			}
		})
	}
}

// TestBurstGPTFailures checks the README's failure rule (Response tokens = 0) on the BurstGPT
// slices, both releases. The counts were taken with an independent awk over the files.
func TestBurstGPTFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rel               string
		failures          int
		sessions, latency bool
	}{
		{"burstgpt/BurstGPT_1_head400.csv", 17, false, false},
		{"burstgpt/BurstGPT_3_slice400.csv", 1, true, true},
	} {
		reqs, info, err := ReadFile(sharedTrace(t, tc.rel), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s := summarize(reqs)
		if info.Format != FormatBurstGPT || s.Requests != 400 || s.Failures != tc.failures {
			t.Errorf("%s: format %s, %d requests, %d failures; want burstgpt, 400, %d", tc.rel, info.Format, s.Requests, s.Failures, tc.failures)
		}
		var withSession, withLatency int
		for _, r := range reqs {
			if r.SessionID != "" {
				withSession++
			}
			if r.Latency > 0 {
				withLatency++
			}
			if r.Model == "" {
				t.Fatalf("%s: request without a model: %+v", tc.rel, r)
			}
		}
		if (withSession > 0) != tc.sessions || (withLatency > 0) != tc.latency {
			t.Errorf("%s: %d requests with a session, %d with a latency; want sessions %v, latency %v", tc.rel, withSession, withLatency, tc.sessions, tc.latency)
		}
	}
}
