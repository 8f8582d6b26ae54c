package workload

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// Dataset sampling strategies: AIPerf's --dataset-sampling-strategy values (its
// DatasetSamplingStrategy and the samplers of aiperf/dataset: SequentialSampler,
// RandomSampler, ShuffleSampler).
const (
	// SamplingSequential takes the entries in order, again from the first after the last.
	SamplingSequential = "sequential"
	// SamplingRandom draws an entry at random for each use, with replacement: an entry may
	// come again before every entry was used.
	SamplingRandom = "random"
	// SamplingShuffle takes the entries in a random order, each once, then in a new random
	// order, and so on: without replacement within each pass.
	SamplingShuffle = "shuffle"
)

// SamplingStrategies lists the strategies, for flag help and errors.
var SamplingStrategies = []string{SamplingSequential, SamplingRandom, SamplingShuffle}

// PreferredSampling is AIPerf's default strategy for a dataset type, its loaders'
// get_preferred_sampling_strategy: sequential for single_turn and multi_turn files (their
// order is the user's), shuffle for synthetic prompts (kind "") and for random_pool and
// ShareGPT files (the base loader's default).
func PreferredSampling(kind string) string {
	switch kind {
	case DatasetSingleTurn, DatasetMultiTurn:
		return SamplingSequential
	}
	return SamplingShuffle
}

// Sampler picks which of n entries use i takes, as a pure function of i (the same i always
// gives the same entry), so that requests built out of order or more than once, and the
// workers of a split run that share the numbering, agree. Safe for concurrent use.
type Sampler struct {
	strategy string
	n        int
	seed     uint64

	mu    sync.Mutex
	pass  int   // the shuffle pass perm belongs to
	perm  []int // that pass's order
	valid bool
}

// NewSampler returns a sampler over n entries with strategy ("" is kind's preferred one),
// its random draws seeded by seed.
func NewSampler(strategy, kind string, n int, seed uint64) (*Sampler, error) {
	if strategy == "" {
		strategy = PreferredSampling(kind)
	}
	switch strategy {
	case SamplingSequential, SamplingRandom, SamplingShuffle:
	default:
		return nil, fmt.Errorf("--dataset-sampling-strategy %q: want one of %s", strategy, strings.Join(SamplingStrategies, ", "))
	}
	if n < 1 {
		return nil, fmt.Errorf("sampling: %d entries, want at least 1", n)
	}
	return &Sampler{strategy: strategy, n: n, seed: seed}, nil
}

// Index returns the entry (0 to n−1) that use i ≥ 0 takes.
func (s *Sampler) Index(i int) int {
	switch s.strategy {
	case SamplingRandom:
		return rand.New(rand.NewPCG(s.seed^0x9001, uint64(i))).IntN(s.n)
	case SamplingShuffle:
		pass, pos := i/s.n, i%s.n
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.valid || s.pass != pass {
			s.perm = rand.New(rand.NewPCG(s.seed^0x5a11, uint64(pass))).Perm(s.n)
			s.pass, s.valid = pass, true
		}
		return s.perm[pos]
	}
	return i % s.n
}
