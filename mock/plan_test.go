package mock

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestOutputLength(t *testing.T) {
	tests := []struct {
		name string
		p    float64
		l    limits
		want int
		why  string
	}{
		{"no eos", 0, limits{max: 40}, 40, "EOSProbability 0 runs to the limit"},
		{"ignore eos", 1, limits{max: 40, ignoreEOS: true}, 40, "ignore_eos wins over a certain EOS"},
		{"min at max", 1, limits{max: 40, min: 40}, 40, "min_tokens >= max_tokens forces max"},
		{"certain eos", 1, limits{max: 40, min: 5}, 5, "EOS is drawn only after min_tokens"},
		{"certain eos no min", 1, limits{max: 40}, 1, "at least one token is generated"},
	}
	for _, tt := range tests {
		rng := rand.New(rand.NewPCG(1, 1))
		if got := outputLength(tt.p, tt.l, rng); got != tt.want {
			t.Errorf("%s: length %d, want %d (%s)", tt.name, got, tt.want, tt.why)
		}
	}
}

// TestOutputLengthGeometric checks the EOS lengths follow the geometric
// law: with p = 0.1 after min 10, the mean extra length is (1-p)/p = 9.
// The draws are seeded, so the figure is fixed, not flaky.
func TestOutputLengthGeometric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 20000
	sum := 0
	for range n {
		got := outputLength(0.1, limits{max: 1000, min: 10}, rng)
		if got < 10 || got > 1000 {
			t.Fatalf("length %d outside [min, max]", got)
		}
		sum += got - 10
	}
	if mean := float64(sum) / n; math.Abs(mean-9) > 0.5 {
		t.Errorf("mean extra length %.2f, want 9 ± 0.5", mean)
	}
}

func TestScheduleExact(t *testing.T) {
	var s schedule
	s.reset(&Config{TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond}, nil)
	for i := range 100 {
		want := 20*time.Millisecond + time.Duration(i)*5*time.Millisecond
		if got := s.advance(); got != want {
			t.Fatalf("token %d at %v, want start+TTFT+i*ITL = %v", i, got, want)
		}
	}
}

// TestScheduleJitter checks the jittered gaps have mean ITL and the
// configured coefficient of variation (seeded, so deterministic).
func TestScheduleJitter(t *testing.T) {
	var s schedule
	const itl, n = time.Millisecond, 50000
	s.reset(&Config{ITL: itl, JitterCV: 0.5}, rand.New(rand.NewPCG(5, 6)))
	s.advance() // TTFT 0
	gaps := make([]float64, n)
	prev := s.at
	for i := range n {
		at := s.advance()
		gaps[i] = float64(at-prev) / float64(itl)
		prev = at
	}
	mean, cv := meanCV(gaps)
	if math.Abs(mean-1) > 0.02 || math.Abs(cv-0.5) > 0.03 {
		t.Errorf("gap mean %.3f ITL and CV %.3f, want 1 and 0.5", mean, cv)
	}
}

// TestScheduleRequestJitter checks that RequestJitterCV scales a request's
// TTFT and every gap by one factor, and that the factors of many requests
// have mean 1 and the configured coefficient of variation (seeded).
func TestScheduleRequestJitter(t *testing.T) {
	const ttft, itl, n = 4 * time.Millisecond, time.Millisecond, 20000
	rng := rand.New(rand.NewPCG(7, 8))
	var s schedule
	factors := make([]float64, 0, n)
	for range n {
		s.reset(&Config{TTFT: ttft, ITL: itl, RequestJitterCV: 0.8}, rng)
		first := s.advance()
		k := float64(first) / float64(ttft)
		for i := 1; i < 5; i++ {
			prev := s.at
			if gap := s.advance() - prev; math.Abs(float64(gap)/float64(itl)-k) > 1e-3*k+1e-6 {
				t.Fatalf("gap %d is %v, want ITL × the request's factor %.4f", i, gap, k)
			}
		}
		factors = append(factors, k)
	}
	mean, cv := meanCV(factors)
	if math.Abs(mean-1) > 0.03 || math.Abs(cv-0.8) > 0.06 {
		t.Errorf("factor mean %.3f and CV %.3f, want 1 and 0.8", mean, cv)
	}
}

// TestScheduleTail checks that TailFraction of requests (drawn per request, seeded) have TTFT
// and ITL multiplied by TailFactor and the others are untouched: the median stays, the tail
// grows.
func TestScheduleTail(t *testing.T) {
	const ttft, itl, n = 4 * time.Millisecond, time.Millisecond, 20000
	rng := rand.New(rand.NewPCG(9, 9))
	var s schedule
	slow := 0
	for range n {
		s.reset(&Config{TTFT: ttft, ITL: itl, TailFraction: 0.05, TailFactor: 3}, rng)
		first := s.advance()
		gap := s.advance() - first
		switch {
		case first == ttft && gap == itl:
		case first == 3*ttft && gap == 3*itl:
			slow++
		default:
			t.Fatalf("a request at TTFT %v and ITL %v: neither the base nor three times it", first, gap)
		}
	}
	if share := float64(slow) / n; math.Abs(share-0.05) > 0.005 {
		t.Errorf("%.4f of requests in the tail, want 0.05", share)
	}
}

// meanCV returns the mean and the coefficient of variation (population) of xs.
func meanCV(xs []float64) (mean, cv float64) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	n := float64(len(xs))
	mean = sum / n
	return mean, math.Sqrt(sq/n-mean*mean) / mean
}

func TestChunkEnding(t *testing.T) {
	cp := choicePlan{tokens: 10, reasoning: 3}
	// k = 2: reasoning 0-1 | 2, content 3-4 | 5-6 | 7-8 | 9.
	want := map[int]int{1: 2, 2: 1, 4: 2, 6: 2, 8: 2, 9: 1}
	total := 0
	for i := range 12 {
		n, reasoning := chunkEnding(i, &cp, 2)
		if n != want[i] {
			t.Errorf("step %d: chunk of %d, want %d", i, n, want[i])
		}
		if n > 0 && reasoning != (i < 3) {
			t.Errorf("step %d: reasoning %v", i, reasoning)
		}
		total += n
	}
	if total != 10 {
		t.Errorf("chunks carry %d tokens, want all 10", total)
	}
}
