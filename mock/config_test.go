package mock

import (
	"flag"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the joined error; nil = valid
		why  string
	}{
		{"zero", Config{}, nil, "the zero Config means the defaults"},
		{"defaults", DefaultConfig(), nil, "DefaultConfig must validate"},
		{"negative delays", Config{TTFT: -1, ITL: -1}, []string{"ttft", "itl"}, "both bad fields are reported at once"},
		{"nan jitter", Config{JitterCV: math.NaN()}, []string{"jitter-cv"}, "NaN passes naive range checks"},
		{"huge jitter", Config{JitterCV: 11}, []string{"jitter-cv"}, "beyond 10 the tail is a hang"},
		{"nan request jitter", Config{RequestJitterCV: math.NaN()}, []string{"request-jitter-cv"}, "NaN passes naive range checks"},
		{"tail", Config{TailFraction: 1.5, TailFactor: 0.5}, []string{"tail-fraction"}, "a share lives in [0, 1]"},
		{"tail factor", Config{TailFraction: 0.1, TailFactor: 0.5}, []string{"tail-factor"}, "a tail is slower, not faster"},
		{"rates", Config{ErrorRate: 1.5, StreamErrorRate: -0.1, EOSProbability: 2}, []string{"error-rate", "stream-error-rate", "eos-probability"}, "probabilities live in [0, 1]"},
		{"negative counts", Config{OutputTokens: -1, TokensPerChunk: -1, Reasoning: -1, LogLimit: -1, MaxOutputTokens: -1}, []string{"output-tokens", "tokens-per-chunk", "reasoning", "log-limit", "max-output-tokens"}, "counts are not negative"},
		{"output over max", Config{OutputTokens: 100, MaxOutputTokens: 10}, []string{"output-tokens 100: above"}, "the default length must be a valid request"},
		{"modes", Config{Usage: "sometimes", PromptCounter: "gpt2"}, []string{`usage "sometimes"`, `prompt-counter "gpt2"`}, "unknown enum values"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err == nil) != (tt.want == nil) {
			t.Errorf("%s: error %v, want errors about %v (%s)", tt.name, err, tt.want, tt.why)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q (%s)", tt.name, err, w, tt.why)
			}
		}
	}
	if _, err := New(Config{TTFT: -1}); err == nil {
		t.Error("New accepted an invalid config")
	}
}

func TestDefaultsFilled(t *testing.T) {
	s, err := New(Config{MaxOutputTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.Model != DefaultModel || c.OutputTokens != 10 || c.TokensPerChunk != 1 || c.Usage != UsageAuto || c.PromptCounter != PromptO200k || c.LogLimit != DefaultLogLimit {
		t.Errorf("defaults not filled (OutputTokens must be clamped to MaxOutputTokens): %+v", c)
	}
}

func TestRegisterFlags(t *testing.T) {
	fs := flag.NewFlagSet("mock", flag.ContinueOnError)
	cfg := RegisterFlags(fs)
	if *cfg != DefaultConfig() {
		t.Fatalf("flag defaults %+v differ from DefaultConfig", *cfg)
	}
	err := fs.Parse([]string{
		"--model", "m", "--ttft", "1ms", "--itl", "2ms", "--jitter-cv", "0.3", "--request-jitter-cv", "0.7", "--output-tokens", "9",
		"--max-output-tokens", "99", "--eos-probability", "0.1", "--tokens-per-chunk", "2", "--reasoning", "3",
		"--role-chunk=false", "--usage", "never", "--prompt-counter", "approx", "--error-rate", "0.2",
		"--stream-error-rate", "0.3", "--seed", "42", "--log-events", "--log-limit", "5", "--event-log", "/tmp/x",
		"--lean-http", "--tail-fraction", "0.05", "--tail-factor", "4", "--slots", "4", "--kv-cache-tokens", "800", "--timings", "--timings-scale", "2.5",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Model: "m", TTFT: time.Millisecond, ITL: 2 * time.Millisecond, JitterCV: 0.3, RequestJitterCV: 0.7, OutputTokens: 9,
		MaxOutputTokens: 99, EOSProbability: 0.1, TokensPerChunk: 2, Reasoning: 3, Usage: UsageNever,
		PromptCounter: PromptApprox, ErrorRate: 0.2, StreamErrorRate: 0.3, Seed: 42, LogEvents: true, LogLimit: 5,
		EventLogPath: "/tmp/x", LeanHTTP: true, TailFraction: 0.05, TailFactor: 4, Slots: 4, KVCacheTokens: 800, Timings: true, TimingsScale: 2.5}
	if *cfg != want {
		t.Errorf("parsed %+v\nwant   %+v", *cfg, want)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n != 26 {
		t.Errorf("%d flags; update this test when adding one", n)
	}
}
