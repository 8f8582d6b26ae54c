package mock

import (
	"math"
	"math/rand/v2"
	"time"
)

// Finish reasons, as OpenAI names them.
const (
	finishLength = "length" // the request's max_tokens was reached
	finishStop   = "stop"   // the model ended the sequence (EOS or the default length)
)

// choicePlan is what one choice will generate.
type choicePlan struct {
	tokens    int // total output tokens, reasoning included, >= 1
	reasoning int // the first `reasoning` tokens are reasoning
	finish    string
}

// plan is every random decision about one response, drawn up front so
// that the writer only follows it.
type plan struct {
	fail        bool // answer HTTP 500 instead
	streamErrAt int  // token step replaced by an error event, or -1
	choices     []choicePlan
	maxTokens   int // the longest choice
}

// makePlan draws the plan of a request from rng. The order of draws is
// fixed so that a seed reproduces the same plan.
func makePlan(p *plan, cfg *Config, l limits, ep endpoint, stream bool, rng *rand.Rand) {
	p.fail = cfg.ErrorRate > 0 && rng.Float64() < cfg.ErrorRate
	p.choices = p.choices[:0]
	p.maxTokens = 0
	for range l.n {
		n := outputLength(cfg.EOSProbability, l, rng)
		c := choicePlan{tokens: n, finish: finishStop}
		if n == l.max && l.explicit {
			c.finish = finishLength
		}
		if ep == chatEndpoint {
			c.reasoning = min(cfg.Reasoning, n)
		}
		p.choices = append(p.choices, c)
		p.maxTokens = max(p.maxTokens, n)
	}
	p.streamErrAt = -1
	if stream && cfg.StreamErrorRate > 0 && rng.Float64() < cfg.StreamErrorRate {
		p.streamErrAt = rng.IntN(p.choices[0].tokens)
	}
}

// outputLength draws a choice's length. Without EOS it is l.max. With EOS
// probability p, each token from position lo = max(min_tokens, 1) on is the
// end of the sequence with probability p, so the length is lo plus a
// geometric number of tokens, capped at l.max.
func outputLength(p float64, l limits, rng *rand.Rand) int {
	lo := max(l.min, 1)
	if l.ignoreEOS || p == 0 || lo >= l.max {
		return l.max
	}
	if p >= 1 {
		return lo
	}
	// Inverse transform of the geometric distribution (failures before the
	// first success): floor(ln(1-U) / ln(1-p)).
	g := math.Floor(math.Log1p(-rng.Float64()) / math.Log1p(-p))
	if g >= float64(l.max-lo) { // also catches +Inf
		return l.max
	}
	return lo + int(g)
}

// schedule yields the intended generation time of each output token as an
// offset from the request's arrival: token 0 at TTFT, token i at the
// previous token's offset plus ITL, each gap multiplied by an independent
// lognormal factor with mean 1 when jitter is on. Offsets are running sums
// of intended gaps, never of measured ones, so the writer's late wake-ups
// cannot accumulate.
type schedule struct {
	ttft, itl time.Duration
	mu, sigma float64 // lognormal parameters of the jitter factor; sigma 0 = none
	rng       *rand.Rand
	next      int           // index of the next token
	at        time.Duration // offset of the last token yielded
}

func (s *schedule) reset(cfg *Config, rng *rand.Rand) {
	*s = schedule{ttft: cfg.TTFT, itl: cfg.ITL, rng: rng}
	if f := lognormalMean1(cfg.RequestJitterCV); f.sigma > 0 {
		// One factor for the whole request: its pace.
		k := math.Exp(f.mu + f.sigma*rng.NormFloat64())
		s.ttft = time.Duration(float64(s.ttft) * k)
		s.itl = time.Duration(float64(s.itl) * k)
	}
	if cfg.TailFraction > 0 && rng.Float64() < cfg.TailFraction {
		s.ttft = time.Duration(float64(s.ttft) * cfg.TailFactor)
		s.itl = time.Duration(float64(s.itl) * cfg.TailFactor)
	}
	f := lognormalMean1(cfg.JitterCV)
	s.mu, s.sigma = f.mu, f.sigma
}

// lognormal holds the parameters of a lognormal distribution; sigma 0 is the
// constant 1.
type lognormal struct{ mu, sigma float64 }

// lognormalMean1 returns the lognormal with mean 1 and coefficient of
// variation cv: sigma² = ln(1+cv²) and mu = -sigma²/2.
func lognormalMean1(cv float64) lognormal {
	if cv <= 0 {
		return lognormal{}
	}
	v := math.Log1p(cv * cv)
	return lognormal{mu: -v / 2, sigma: math.Sqrt(v)}
}

// advance returns the offset of the next token.
func (s *schedule) advance() time.Duration {
	gap := s.itl
	if s.next == 0 {
		gap = s.ttft
	}
	s.next++
	if s.sigma > 0 && gap > 0 {
		gap = time.Duration(float64(gap) * math.Exp(s.mu+s.sigma*s.rng.NormFloat64()))
	}
	s.at += gap
	return s.at
}
