package gen

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestTraceReplaysTimestamps(t *testing.T) {
	// Recorded Unix-epoch timestamps, including a tie and gaps that are not a multiple of the
	// speedup: offsets are (tsᵢ − ts₀)/speedup, each rounded once to the nanosecond.
	base := time.Duration(1_767_225_600) * time.Second
	ts := []time.Duration{base, base + 1, base + 333*time.Millisecond, base + 333*time.Millisecond,
		base + 2*time.Second + 7, base + time.Hour}
	for _, speedup := range []float64{1, 2, 3, 0.5, 1e-3, 1000} {
		tr, err := NewTrace(ts, speedup)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Len() != len(ts) {
			t.Fatalf("Len = %d, want %d", tr.Len(), len(ts))
		}
		for i, at := range ts {
			want := time.Duration(math.Round(float64(at-ts[0]) / speedup))
			if got := tr.Next(); got != want {
				t.Errorf("speedup %v: request %d at %v, want %v", speedup, i, got, want)
			}
		}
		if got := tr.Next(); got != End {
			t.Errorf("speedup %v: %v after the last timestamp, want End", speedup, got)
		}
	}
	// At speedup 1 the offsets are the recorded differences exactly, with no float on the way.
	big := []time.Duration{0, 1<<53 + 1}
	tr, _ := NewTrace(big, 1)
	if tr.Next(); tr.Next() != 1<<53+1 {
		t.Error("speedup 1 lost precision on a large offset")
	}
}

func TestTraceErrors(t *testing.T) {
	cases := []struct {
		name    string
		ts      []time.Duration
		speedup float64
		want    []string
	}{
		{"zero speedup would never send", []time.Duration{0}, 0, []string{"speedup 0"}},
		{"negative speedup", nil, -1, []string{"speedup -1"}},
		{"NaN speedup", nil, math.NaN(), []string{"speedup NaN"}},
		{"infinite speedup", nil, math.Inf(1), []string{"speedup +Inf"}},
		{"unsorted trace: reported once, with the position", []time.Duration{0, 5, 3, 1}, 1, []string{"timestamp 2 (3ns) is before timestamp 1 (5ns)"}},
		{"both at once", []time.Duration{2, 1}, 0, []string{"speedup 0", "timestamp 1"}},
	}
	for _, c := range cases {
		_, err := NewTrace(c.ts, c.speedup)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
	// An empty trace is valid and simply ends.
	if tr, err := NewTrace(nil, 1); err != nil || tr.Next() != End {
		t.Errorf("empty trace: %v, want a trace that ends at once", err)
	}
}
