package workload

import (
	"fmt"
	"math"
	"sync"
)

// TokenFit learns how many tokens a server counts for a prompt built of n corpus tokens
// (o200k_base, or the --tokenizer's), from the input tokens the server reports in its
// responses' usage: counted ≈ Offset + Ratio·n, by least squares. A server that counts with
// another tokenizer counts another number of tokens for the same text, and its chat template
// adds a few tokens to every prompt; a replay that sizes its prompts with Size reproduces the recorded input
// lengths as the server counts them, without being told the server's tokenizer.
//
// Until it has seen MinFit responses of at least two lengths, Size asks for the target itself
// (Ratio 1, Offset 0). It is safe for concurrent use.
type TokenFit struct {
	mu               sync.Mutex
	n                int
	sx, sy, sxx, sxy float64
}

// MinFit is the fewest responses TokenFit fits a ratio from.
const MinFit = 8

// Observe adds one response: a prompt built of sent corpus tokens that the server counted as
// counted input tokens. Observations that cannot be one (not positive) are ignored.
func (f *TokenFit) Observe(sent int, counted int64) {
	if sent <= 0 || counted <= 0 {
		return
	}
	x, y := float64(sent), float64(counted)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.sx += x
	f.sy += y
	f.sxx += x * x
	f.sxy += x * y
}

// Fit returns the fitted ratio (server tokens per corpus token) and offset (server tokens added
// to every prompt), and how many responses they come from; 1, 0, 0 before MinFit responses. A
// fit whose lengths are all alike has no slope to tell apart from the offset: it keeps the
// offset at 0 and returns the ratio of the sums. The ratio is kept within [1/4, 4] and the
// offset within ±1,000 tokens, so one odd response cannot size prompts absurdly.
func (f *TokenFit) Fit() (ratio, offset float64, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n < MinFit {
		return 1, 0, f.n
	}
	k := float64(f.n)
	vx := f.sxx - f.sx*f.sx/k
	if vx <= 1e-9*f.sxx {
		return clamp(f.sy/f.sx, 0.25, 4), 0, f.n
	}
	ratio = (f.sxy - f.sx*f.sy/k) / vx
	offset = (f.sy - ratio*f.sx) / k
	if !(ratio > 0) {
		return clamp(f.sy/f.sx, 0.25, 4), 0, f.n
	}
	return clamp(ratio, 0.25, 4), clamp(offset, -1000, 1000), f.n
}

// Size returns the corpus tokens to build a prompt of so that the server counts target input
// tokens: (target − offset) / ratio, at least 1.
func (f *TokenFit) Size(target int) int {
	ratio, offset, _ := f.Fit()
	return max(1, int(math.Round((float64(target)-offset)/ratio)))
}

// String says the fit, for a run's log.
func (f *TokenFit) String() string {
	ratio, offset, n := f.Fit()
	if n < MinFit {
		return fmt.Sprintf("prompts sized as asked: %d responses reported input tokens, fewer than the %d a fit needs", n, MinFit)
	}
	return fmt.Sprintf("prompts sized at %.4f server tokens per prompt token %+.1f a prompt, fitted to the usage of %d responses", ratio, offset, n)
}

func clamp(x, lo, hi float64) float64 { return min(hi, max(lo, x)) }
