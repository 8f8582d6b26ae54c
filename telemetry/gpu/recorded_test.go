package gpu

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
)

// TestRecordedH200 decodes samples recorded by cmd/llmtap-gpuprobe on a real
// idle NVIDIA H200 (driver 580.159.04, 250 ms interval, 8 s), so the JSON
// form, the units and the energy arithmetic are checked against what the
// hardware really reports rather than against mock values.
func TestRecordedH200(t *testing.T) {
	f, err := os.Open("testdata/h200-samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var samples []Sample
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	for {
		var s Sample
		if err := dec.Decode(&s); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("sample %d: %v", len(samples)+1, err)
		}
		samples = append(samples, s)
	}
	if len(samples) != 33 {
		t.Fatalf("decoded %d samples, want the 33 recorded", len(samples))
	}
	for i, s := range samples {
		if !strings.HasPrefix(s.UUID, "GPU-") || s.Name != "NVIDIA H200" || s.Index != 0 {
			t.Errorf("sample %d identity %d %q %q", i, s.Index, s.UUID, s.Name)
		}
		if s.Valid != FieldAll {
			t.Errorf("sample %d valid %v: the H200 supports every field", i, s.Valid)
		}
		if s.PowerMW == 0 || s.MemTotal != 150754820096 || s.SMClockMHz == 0 {
			t.Errorf("sample %d implausible: %+v", i, s)
		}
		if i > 0 {
			if s.EnergyMJ < samples[i-1].EnergyMJ {
				t.Errorf("energy counter went backwards at sample %d: %d < %d", i, s.EnergyMJ, samples[i-1].EnergyMJ)
			}
			if !s.Time.After(samples[i-1].Time) {
				t.Errorf("sample %d not after sample %d", i, i-1)
			}
		}
	}

	// Over the whole run the counter and the integral of the one-second
	// averaged power reading agreed within 2.1% (the integral runs high at
	// the start, while the averaged reading still decays from a wake-up).
	from, to := samples[0].Time, samples[len(samples)-1].Time
	e, p := EnergyBetween(samples, from, to), PowerIntegral(samples, from, to)
	if e.Resets != 0 || e.Samples != 33 || math.Abs(e.Joules-618.721) > 1e-6 {
		t.Errorf("counter energy %+v, want 618.721 J from 33 samples", e)
	}
	if diff := math.Abs(e.Joules-p.Joules) / p.Joules; diff > 0.03 {
		t.Errorf("counter %.1f J vs integral %.1f J differ by %.1f%%, want < 3%%", e.Joules, p.Joules, 100*diff)
	}
	if w := e.AvgWatts(); w < 70 || w > 90 {
		t.Errorf("idle H200 average %.1f W, recorded about 77 W", w)
	}
}
