package workload

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestNormalSample(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		d        Normal
		min, max int
		mean     float64 // expected sample mean, within 2%
	}{
		{"zero stddev gives the mean every time", Normal{550, 0}, 550, 550, 550},
		{"fractional mean rounds", Normal{2.6, 0}, 3, 3, 3},
		{"a mean below one clamps to one token", Normal{0, 0}, 1, 1, 1},
		{"a wide spread clamps at one, never zero or negative", Normal{5, 50}, 1, math.MaxInt32, 0},
		{"a normal spread keeps its mean", Normal{1000, 100}, 1, math.MaxInt32, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			sum := 0.0
			const n = 20000
			for range n {
				v := tt.d.Sample(rng)
				if v < tt.min || v > tt.max {
					t.Fatalf("sample %d outside [%d, %d]", v, tt.min, tt.max)
				}
				sum += float64(v)
			}
			if tt.mean > 0 && math.Abs(sum/n-tt.mean) > 0.02*tt.mean {
				t.Fatalf("sample mean %.2f, want %.2f", sum/n, tt.mean)
			}
		})
	}
}

func TestParseMix(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		shapes int
		err    bool
	}{
		{"AIPerf's example", "128,64:25;512,128:50;1024,256:25", 3, false},
		{"stddevs after a bar", "512|50,128|10:1", 1, false},
		{"trailing separator and spaces are fine", " 128,64:1 ; ", 1, false},
		{"missing weight", "128,64", 0, true},
		{"missing output length", "128:5", 0, true},
		{"zero weight", "128,64:0", 0, true},
		{"negative length", "-5,64:1", 0, true},
		{"not a number", "abc,64:1", 0, true},
		{"empty", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMix(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err == nil && len(m.Shapes()) != tt.shapes {
				t.Fatalf("%d shapes, want %d", len(m.Shapes()), tt.shapes)
			}
		})
	}
}

// TestMixWeights checks that shapes are drawn in proportion to their weights.
func TestMixWeights(t *testing.T) {
	t.Parallel()
	m, err := ParseMix("100,10:25;200,20:75")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	small := 0
	const n = 40000
	for range n {
		isl, osl := m.Sample(rng)
		switch {
		case isl == 100 && osl == 10:
			small++
		case isl == 200 && osl == 20:
		default:
			t.Fatalf("drew (%d, %d), which is no shape of the mix", isl, osl)
		}
	}
	if f := float64(small) / n; math.Abs(f-0.25) > 0.01 {
		t.Fatalf("first shape drawn %.3f of the time, want 0.25", f)
	}
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"128,64:25;512,128:50", "512|50,128|10:1", "", ";;", "1,1:1e308", "a,b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(1, 1))
		for range 10 {
			if isl, osl := m.Sample(rng); isl < 1 || osl < 1 {
				t.Fatalf("%q drew (%d, %d)", s, isl, osl)
			}
		}
	})
}
