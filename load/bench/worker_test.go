package bench

import (
	"slices"
	"testing"
	"time"

	"github.com/llmtap/llmtap/load/gen"
)

// TestWorkerSharesPartition: for any count, the workers' request numbers, concurrency shares
// and taken items partition the whole: every number once, shares adding up.
func TestWorkerSharesPartition(t *testing.T) {
	for count := 1; count <= 5; count++ {
		for _, total := range []int{0, 1, 4, 10, 23} {
			var ns []int
			conc, items := 0, 0
			xs := make([]int, total)
			for i := range xs {
				xs[i] = i
			}
			for i := range count {
				w := Worker{Index: i, Count: count}
				if err := w.Validate(); err != nil {
					t.Fatal(err)
				}
				for k := range w.Requests(total) {
					ns = append(ns, w.N(k))
				}
				conc += w.Concurrency(7)
				for _, x := range Take(w, xs) {
					if x%count != i {
						t.Errorf("worker %d of %d took item %d", i, count, x)
					}
					items++
				}
			}
			slices.Sort(ns)
			if !slices.Equal(ns, xs) || conc != 7 || items != total {
				t.Errorf("count %d total %d: numbers %v, concurrency %d of 7, %d items", count, total, ns, conc, items)
			}
		}
	}
	for _, w := range []Worker{{0, 0}, {-1, 2}, {2, 2}} {
		if w.Validate() == nil {
			t.Errorf("%+v validates", w)
		}
	}
}

// TestShiftedConstantRatesInterleave: three constant processes of rate λ/3 shifted by i/λ
// give exactly the instants of one process of rate λ.
func TestShiftedConstantRatesInterleave(t *testing.T) {
	const rate = 100.0
	var got []time.Duration
	for i := range 3 {
		a := Shifted(gen.NewConstant(rate/3), time.Duration(float64(i)/rate*float64(time.Second)))
		for range 10 {
			got = append(got, a.Next())
		}
	}
	slices.Sort(got)
	one := gen.NewConstant(rate)
	for k, g := range got {
		if want := one.Next(); (g - want).Abs() > time.Microsecond {
			t.Fatalf("arrival %d at %v, want %v", k, g, want)
		}
	}
	tr, _ := gen.NewTrace([]time.Duration{0}, 1)
	s := Shifted(tr, time.Second)
	if s.Next() != time.Second || s.Next() != gen.End {
		t.Error("a shifted trace must keep its end")
	}
}

func TestWorkerFromEnv(t *testing.T) {
	t.Setenv(EnvWorkerIndex, "2")
	t.Setenv(EnvWorkerCount, "4")
	if w, err := WorkerFromEnv(); err != nil || w != (Worker{2, 4}) {
		t.Errorf("%+v %v, want index 2 of 4", w, err)
	}
	t.Setenv(EnvWorkerCount, "")
	if w, err := WorkerFromEnv(); err != nil || w != (Worker{2, 1}) {
		t.Errorf("%+v %v: an unset count is 1", w, err)
	}
	t.Setenv(EnvWorkerIndex, "two")
	if _, err := WorkerFromEnv(); err == nil {
		t.Error("a malformed index is accepted")
	}
}

func TestParseStartAt(t *testing.T) {
	want := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	for _, s := range []string{"2026-12-01T10:00:00.5Z", "2026-12-01T11:00:00.5+01:00", "1796119200.5"} {
		got, err := ParseStartAt(s)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	if at, err := ParseStartAt(""); err != nil || !at.IsZero() {
		t.Error("empty must be no start time")
	}
	for _, s := range []string{"soon", "-5", "1e30", "NaN", "10:00"} {
		if _, err := ParseStartAt(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// FuzzParseStartAt: any text is a time or an error, never a panic, and a time it accepts lies
// within the years 0–9999 (RFC 3339) or 1970–5138 (Unix seconds below 10^11).
func FuzzParseStartAt(f *testing.F) {
	for _, s := range []string{"2026-12-01T10:00:00Z", "1796119200.25", "", "x", "1e10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, err := ParseStartAt(s)
		if err == nil && s != "" && (at.Year() < 0 || at.Year() > 10000) {
			t.Errorf("%q: %v", s, at)
		}
	})
}
