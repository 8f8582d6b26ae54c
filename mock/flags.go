package mock

import "flag"

// RegisterFlags binds every Config field that a command line can set to a
// kebab-case flag on fs, with DefaultConfig's values as defaults, and
// returns the Config the flags write into. Call fs.Parse, then Validate
// (New does) before use:
//
//	cfg := mock.RegisterFlags(fs)
//	if err := fs.Parse(args); err != nil { ... }
//	srv, err := mock.New(*cfg)
//
// EventLog (an io.Writer) has no flag; --event-log sets EventLogPath.
func RegisterFlags(fs *flag.FlagSet) *Config {
	c := DefaultConfig()
	fs.StringVar(&c.Model, "model", c.Model, "model name listed by /v1/models and used when a request names none")
	fs.DurationVar(&c.TTFT, "ttft", c.TTFT, "time from arrival to the first generated token")
	fs.DurationVar(&c.ITL, "itl", c.ITL, "time between consecutive generated tokens")
	fs.Float64Var(&c.JitterCV, "jitter-cv", c.JitterCV, "coefficient of variation of lognormal jitter on TTFT and each ITL gap (0 = exact)")
	fs.Float64Var(&c.TailFraction, "tail-fraction", c.TailFraction, "share of requests, drawn per request, whose TTFT and ITL are multiplied by --tail-factor (same median, worse tail)")
	fs.Float64Var(&c.TailFactor, "tail-factor", c.TailFactor, "factor on the TTFT and ITL of the --tail-fraction of requests")
	fs.Float64Var(&c.RequestJitterCV, "request-jitter-cv", c.RequestJitterCV, "coefficient of variation of a lognormal factor drawn per request on its TTFT and ITL (0 = every request at the same pace)")
	fs.IntVar(&c.OutputTokens, "output-tokens", c.OutputTokens, "tokens generated when a request sets no max_tokens")
	fs.IntVar(&c.MaxOutputTokens, "max-output-tokens", c.MaxOutputTokens, "largest max_tokens accepted; larger requests get HTTP 400")
	fs.Float64Var(&c.EOSProbability, "eos-probability", c.EOSProbability, "per-token probability of stopping early after min_tokens (ignored with ignore_eos)")
	fs.IntVar(&c.TokensPerChunk, "tokens-per-chunk", c.TokensPerChunk, "tokens carried by one content event")
	fs.IntVar(&c.Reasoning, "reasoning", c.Reasoning, "reasoning tokens a chat response emits before its content")
	fs.BoolVar(&c.RoleChunk, "role-chunk", c.RoleChunk, "start chat streams with a role-only chunk")
	fs.StringVar((*string)(&c.Usage), "usage", string(c.Usage), "usage chunk in streams: auto (as stream_options.include_usage asks), always or never")
	fs.StringVar((*string)(&c.PromptCounter), "prompt-counter", string(c.PromptCounter), "prompt_tokens counting: o200k (exact) or approx (bytes/4, free)")
	fs.Float64Var(&c.ErrorRate, "error-rate", c.ErrorRate, "fraction of requests answered with HTTP 500")
	fs.Float64Var(&c.StreamErrorRate, "stream-error-rate", c.StreamErrorRate, "fraction of streams that fail mid-way with an error event")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of every random choice")
	fs.BoolVar(&c.LogEvents, "log-events", c.LogEvents, "keep ground-truth traces of recent responses in memory")
	fs.IntVar(&c.LogLimit, "log-limit", c.LogLimit, "how many traces and arrivals to keep in memory")
	fs.StringVar(&c.EventLogPath, "event-log", c.EventLogPath, "append one JSON line of ground truth per response to this file")
	fs.IntVar(&c.Slots, "slots", c.Slots, "requests generated at once; more wait for a slot and report the wait as queue time (0 = unlimited)")
	fs.IntVar(&c.KVCacheTokens, "kv-cache-tokens", c.KVCacheTokens, "KV cache in tokens: /metrics reports the prompt and generated tokens of running requests over it as vllm:kv_cache_usage_perc (0 = no such gauge)")
	fs.BoolVar(&c.Timings, "timings", c.Timings, "report llama.cpp's timings object on OpenAI streams and bodies")
	fs.Float64Var(&c.TimingsScale, "timings-scale", c.TimingsScale, "factor on every duration the mock reports about its own work (1 = the truth)")
	fs.BoolVar(&c.LeanHTTP, "lean-http", c.LeanHTTP, "serve HTTP/1.1 with a lean server (less CPU per small request; for benchmarks on few cores)")
	return &c
}
