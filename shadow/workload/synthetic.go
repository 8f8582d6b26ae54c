package workload

import (
	"math/rand/v2"
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
func (s *Synthetic) Bodies(n int) ([][]byte, error) {
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
