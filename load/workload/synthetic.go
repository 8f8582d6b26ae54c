package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/llmtap/llmtap/internal/limits"
)

// Lengths draws a request's input and output lengths.
type Lengths interface {
	Sample(rng *rand.Rand) (isl, osl int)
}

// Pair draws input and output lengths from independent normal distributions (--isl/--osl).
// An OSL mean of 0 draws 0: no output limit is sent.
type Pair struct {
	ISL, OSL Normal
}

// Sample draws (input, output) lengths.
func (p Pair) Sample(rng *rand.Rand) (isl, osl int) {
	isl = p.ISL.Sample(rng)
	if p.OSL.Mean > 0 {
		osl = p.OSL.Sample(rng)
	}
	return isl, osl
}

// Synthetic makes the bodies of a synthetic benchmark. Request n draws from its own stream,
// PCG(Seed, n), so a body depends only on the seed and n: runs repeat exactly, whatever the
// concurrency and the order in which requests are built.
type Synthetic struct {
	Corpus  *Corpus
	Lengths Lengths
	Spec    BodySpec
	Seed    uint64
}

// Request is one synthetic request.
type Request struct {
	Body     []byte
	ISL, OSL int
}

// Request builds request n.
func (s *Synthetic) Request(n int) (Request, error) {
	rng := rand.New(rand.NewPCG(s.Seed, uint64(n)))
	isl, osl := s.Lengths.Sample(rng)
	prompt := s.Corpus.Random(make([]byte, 0, isl*5), isl, rng)
	body, err := s.Spec.Build(string(prompt), osl)
	return Request{Body: body, ISL: isl, OSL: osl}, err
}

// Bodies builds the bodies of requests 0 … n−1, the pool a benchmark or a shadow load sends
// in turn.
//
// n is at most limits.MaxEntries, and the prompts at most limits.MaxPoolTokens tokens in all:
// past either, Bodies stops with an error naming the limit rather than filling memory.
func (s *Synthetic) Bodies(n int) ([][]byte, error) {
	if n > limits.MaxEntries {
		return nil, fmt.Errorf("%d dataset entries: over the limit of %d (limits.MaxEntries)", n, limits.MaxEntries)
	}
	// The lengths are drawn first (as Request draws them), so that a pool over the limit is
	// refused before any of it is built.
	tokens := 0
	for i := range n {
		isl, _ := s.Lengths.Sample(rand.New(rand.NewPCG(s.Seed, uint64(i))))
		if tokens += isl; tokens > limits.MaxPoolTokens {
			return nil, fmt.Errorf("the first %d of %d dataset entries hold %d prompt tokens: over the limit of %d built in memory (limits.MaxPoolTokens); use fewer entries or shorter prompts", i+1, n, tokens, limits.MaxPoolTokens)
		}
	}
	pool := make([][]byte, n)
	for i := range pool {
		req, err := s.Request(i)
		if err != nil {
			return nil, err
		}
		pool[i] = req.Body
	}
	return pool, nil
}
