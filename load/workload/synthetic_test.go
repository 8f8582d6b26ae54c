package workload

import (
	"bytes"
	"testing"

	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/telemetry/decode"
	"math/rand/v2"
	"strings"
)

// TestSyntheticDeterministic checks that a request depends on the seed and its number only,
// and that its prompt has exactly the input length it reports.
func TestSyntheticDeterministic(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	mk := func(seed uint64) *Synthetic {
		return &Synthetic{Corpus: c, Seed: seed,
			Lengths: Pair{ISL: Normal{300, 80}, OSL: Normal{50, 10}},
			Spec:    BodySpec{Endpoint: EndpointChat, Model: "m", Stream: true}}
	}
	a, b, other := mk(7), mk(7), mk(8)
	differ := 0
	for n := range 20 {
		ra, err := a.Request(n)
		if err != nil {
			t.Fatal(err)
		}
		rb, _ := b.Request(n)
		ro, _ := other.Request(n)
		if !bytes.Equal(ra.Body, rb.Body) {
			t.Fatalf("request %d differs between two runs with the same seed", n)
		}
		if !bytes.Equal(ra.Body, ro.Body) {
			differ++
		}
		req := decode.ParseRequest(ra.Body, 1<<20)
		if got := count(t, req.Prompt); got != ra.ISL {
			t.Fatalf("request %d: prompt has %d tokens, ISL %d", n, got, ra.ISL)
		}
		if req.MaxTokens != int64(ra.OSL) || ra.OSL < 1 {
			t.Fatalf("request %d: max tokens %d, OSL %d", n, req.MaxTokens, ra.OSL)
		}
	}
	if differ < 19 {
		t.Fatalf("only %d of 20 requests differ between seeds 7 and 8", differ)
	}
	// Out-of-order building gives the same request.
	r5, _ := a.Request(5)
	r5b, _ := mk(7).Request(5)
	if !bytes.Equal(r5.Body, r5b.Body) {
		t.Fatal("request 5 built first differs from request 5 built fifth")
	}
}

func BenchmarkSyntheticRequest(b *testing.B) {
	s := &Synthetic{Corpus: corpus(b), Seed: 1, Lengths: Pair{ISL: Normal{550, 0}, OSL: Normal{128, 0}},
		Spec: BodySpec{Endpoint: EndpointChat, Model: "m", Stream: true}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := s.Request(i); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBodiesBounded: a pool of more entries than limits.MaxEntries, or of prompts past
// limits.MaxPoolTokens in all, is refused before a body is built (bench --isl 1e8 with 100
// entries took 5.8 GB); a length is clamped to limits.MaxTokens and a mean past it refused.
func TestBodiesBounded(t *testing.T) {
	t.Parallel()
	c := corpus(t)
	syn := &Synthetic{Corpus: c, Lengths: Pair{ISL: Normal{Mean: limits.MaxTokens}}, Spec: BodySpec{Endpoint: EndpointChat, Model: "m"}}
	if _, err := syn.Bodies(limits.MaxPoolTokens/limits.MaxTokens + 1); err == nil || !strings.Contains(err.Error(), "limits.MaxPoolTokens") {
		t.Errorf("pool: %v", err)
	}
	syn.Lengths = Pair{ISL: Normal{Mean: 10}}
	if _, err := syn.Bodies(limits.MaxEntries + 1); err == nil || !strings.Contains(err.Error(), "limits.MaxEntries") {
		t.Errorf("entries: %v", err)
	}
	if err := (Normal{Mean: 1e12}).Validate(); err == nil || !strings.Contains(err.Error(), "limits.MaxTokens") {
		t.Errorf("mean 1e12: %v", err)
	}
	if n := (Normal{Mean: limits.MaxTokens, Stddev: 1e6}).Sample(rand.New(rand.NewPCG(1, 1))); n > limits.MaxTokens {
		t.Errorf("a draw of %d tokens", n)
	}
}
