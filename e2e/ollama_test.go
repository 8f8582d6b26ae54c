package e2e

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

// Timing tolerances of the comparison with Ollama's own durations (its final /api/chat line).
// llmtap measures from the moment the request reached it to the moment each event reached its
// writer; Ollama measures intervals inside its runner. The intervals are nested, which gives a
// causal bound that cannot flake, and the rest is a sanity bound wide enough for a loaded
// two-core machine under the race detector.
const (
	// clockSlackMs absorbs rounding only: load_duration and prompt_eval_duration happen after
	// the request reached llmtap and before the first token left Ollama, so TTFT is at least
	// their sum, and Ollama's total_duration lies inside llmtap's duration.
	clockSlackMs = 0.1
	// maxPrefillOverheadMs bounds TTFT − (load + prompt_eval): two loopback HTTP hops (Caddy,
	// the test's tee), Ollama's template, tokenization and scheduling. Measured 2-4 ms on an
	// idle 2-core machine; the bound catches a TTFT taken from the wrong event (the last one,
	// the end of the body), not a slow machine.
	maxPrefillOverheadMs = 250
	// decodeAbsMs and decodeRel bound |decode − eval_duration|, where decode is llmtap's
	// request latency − TTFT (first to last content event). eval_duration covers the same
	// tokens plus the first token's sampling and less the last token's delivery, so they
	// differ by about one token (measured 0.4-3 ms for 64 tokens taking 70-250 ms); the bound
	// catches a buffered stream (decode near 0) or a wrong unit, not a slow machine.
	decodeAbsMs = 30
	decodeRel   = 0.25
)

// case bodies: temperature 0 and a seed make Ollama's output the same on every request, so a
// direct request and one through llmtap can be compared byte for byte (ids and times aside).
func chatBody(stream, usage bool) []byte {
	m := map[string]any{"model": model, "stream": stream, "max_tokens": 64, "temperature": 0, "seed": 1,
		"messages": []map[string]string{{"role": "user", "content": "Once upon a time"}}}
	if usage {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}

func completionsBody(stream, usage bool) []byte {
	m := map[string]any{"model": model, "stream": stream, "max_tokens": 64, "temperature": 0, "seed": 1,
		"prompt": "Once upon a time"}
	if usage {
		m["stream_options"] = map[string]bool{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return b
}

func nativeChatBody(stream, _ bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
		"options":  map[string]any{"num_predict": 64, "temperature": 0, "seed": 1},
		"messages": []map[string]string{{"role": "user", "content": "Once upon a time"}}})
	return b
}

// volatile matches what differs between two identical requests to Ollama: ids, creation
// times and durations.
var volatile = regexp.MustCompile(`"(id|created|created_at|total_duration|load_duration|prompt_eval_duration|eval_duration)":("[^"]*"|[0-9]+)`)

func normalize(b []byte) string { return volatile.ReplaceAllString(string(b), `"$1":_`) }

// usageChunk matches the usage-only SSE event include_usage adds.
var usageChunk = regexp.MustCompile(`data: \{[^\n]*"choices":\[\],[^\n]*"usage":\{[^\n]*\n\n`)

func TestOllamaThroughLlmtap(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		body   func(stream, usage bool) []byte
		stream bool
		usage  bool // the client asks for stream_options.include_usage
		inject bool // through the site with inject_usage
		// counted says where llmtap's token count comes from: "usage" (the server's), or
		// "tokenizer" when the server sent none.
		counted string
	}{
		{"chat stream asking for usage", "/v1/chat/completions", chatBody, true, true, false, record.SourceUsage},
		{"chat stream without usage is counted by the tokenizer", "/v1/chat/completions", chatBody, true, false, false, record.SourceTokenizer},
		{"chat stream without usage, injected: the server's count, the client's bytes", "/v1/chat/completions", chatBody, true, false, true, record.SourceUsage},
		{"chat stream asking for usage, inject site: nothing to inject", "/v1/chat/completions", chatBody, true, true, true, record.SourceUsage},
		{"chat body", "/v1/chat/completions", chatBody, false, false, false, record.SourceUsage},
		{"chat body, inject site: not a stream", "/v1/chat/completions", chatBody, false, false, true, record.SourceUsage},
		{"completions stream asking for usage", "/v1/completions", completionsBody, true, true, false, record.SourceUsage},
		{"completions stream, inject site: legacy completions are not injected", "/v1/completions", completionsBody, true, false, true, record.SourceTokenizer},
		{"completions body", "/v1/completions", completionsBody, false, false, false, record.SourceUsage},
		{"completions body, inject site", "/v1/completions", completionsBody, false, false, true, record.SourceUsage},
		{"native chat stream", "/api/chat", nativeChatBody, true, false, false, record.SourceUsage},
		{"native chat stream, inject site: not an OpenAI route", "/api/chat", nativeChatBody, true, false, true, record.SourceUsage},
		{"native chat body", "/api/chat", nativeChatBody, false, false, false, record.SourceUsage},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "ollama-" + string(rune('a'+i))
			body := tt.body(tt.stream, tt.usage)
			site := env.plain
			if tt.inject {
				site = env.inject
			}
			direct := post(t, env.ollama+tt.path, "", body)
			got := post(t, site+tt.path, id, body)
			upstream := upstreamBody(t, env.ollamaTee, id)

			injected := tt.inject && tt.stream && !tt.usage && tt.path == "/v1/chat/completions"
			want := upstream
			if injected {
				if n := len(usageChunk.FindAll(upstream, -1)); n != 1 {
					t.Fatalf("llmtap should have made Ollama send one usage chunk; it sent %d:\n%s", n, tail(upstream))
				}
				want = usageChunk.ReplaceAll(upstream, nil)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("the client got other bytes than Ollama sent (less the injected usage chunk):\n--- got\n%s\n--- want\n%s", tail(got), tail(want))
			}
			if normalize(got) != normalize(direct) {
				t.Fatalf("the client got other bytes than a direct request (ids and times aside):\n--- through llmtap\n%s\n--- direct\n%s", tail(got), tail(direct))
			}

			rec := recordOf(t, id)
			if rec.Error != "" || rec.Status != 200 || rec.Stream != tt.stream {
				t.Fatalf("record: error %q (%s), status %d, stream %v", rec.Error, rec.ErrorMsg, rec.Status, rec.Stream)
			}
			if rec.OutputTokensSource != tt.counted {
				t.Fatalf("output_tokens_source %q, want %q", rec.OutputTokensSource, tt.counted)
			}
			in, out := serverCounts(t, tt.path, upstream)
			switch tt.counted {
			case record.SourceUsage:
				if rec.OutputTokens != out || rec.InputTokens != in || rec.InputTokensSource != record.SourceUsage {
					t.Errorf("llmtap counted %d in (%s), %d out; Ollama reported %d in, %d out",
						rec.InputTokens, rec.InputTokensSource, rec.OutputTokens, in, out)
				}
			default:
				if rec.OutputTokens <= 0 {
					t.Errorf("no tokens counted: %d", rec.OutputTokens)
				}
			}
			if tt.path == "/api/chat" && tt.stream {
				checkTiming(t, rec)
			}
		})
	}
}

// serverCounts reads the input and output token counts Ollama reported in what it sent: the
// usage object (OpenAI routes) or prompt_eval_count and eval_count (native).
func serverCounts(t *testing.T, path string, b []byte) (in, out int64) {
	t.Helper()
	if path == "/api/chat" {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var last struct{ PromptEvalCount, EvalCount int64 }
		var raw map[string]json.RawMessage
		json.Unmarshal([]byte(lines[len(lines)-1]), &raw)
		json.Unmarshal(raw["prompt_eval_count"], &last.PromptEvalCount)
		json.Unmarshal(raw["eval_count"], &last.EvalCount)
		return last.PromptEvalCount, last.EvalCount
	}
	doc := b
	if m := usageChunk.Find(b); m != nil {
		doc = bytes.TrimSpace(bytes.TrimPrefix(m, []byte("data: ")))
	} else if bytes.HasPrefix(b, []byte("data:")) {
		return -1, -1 // a stream without usage
	}
	var v struct {
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		}
	}
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("reading Ollama's usage: %v: %s", err, doc)
	}
	return v.Usage.Prompt, v.Usage.Completion
}

// checkTiming compares llmtap's TTFT and decode time with Ollama's own durations.
func checkTiming(t *testing.T, rec record.Record) {
	t.Helper()
	st := rec.Server
	if st == nil || rec.TTFTMs == nil || rec.RequestLatencyMs == nil {
		t.Fatalf("the record lacks server timings or TTFT: %+v", rec)
	}
	ttft, decode := *rec.TTFTMs, *rec.RequestLatencyMs-*rec.TTFTMs
	prefill := st.LoadMs + st.PromptEvalMs
	t.Logf("TTFT %.2f ms vs load+prompt_eval %.2f ms (%.2f + %.2f): overhead %.2f ms; decode %.2f ms vs eval %.2f ms (%d tokens): diff %.2f ms; duration %.2f ms vs total %.2f ms",
		ttft, prefill, st.LoadMs, st.PromptEvalMs, ttft-prefill, decode, st.EvalMs, st.EvalCount, st.EvalMs-decode, rec.DurationMs, st.TotalMs)
	if ttft+clockSlackMs < prefill {
		t.Errorf("TTFT %.3f ms is shorter than Ollama's load + prompt eval, %.3f ms, which it contains", ttft, prefill)
	}
	if ttft-prefill > maxPrefillOverheadMs {
		t.Errorf("TTFT %.1f ms exceeds load + prompt eval (%.1f ms) by more than %d ms", ttft, prefill, maxPrefillOverheadMs)
	}
	if rec.DurationMs+clockSlackMs < st.TotalMs {
		t.Errorf("llmtap's duration %.3f ms is shorter than Ollama's total %.3f ms, which it contains", rec.DurationMs, st.TotalMs)
	}
	if diff := decode - st.EvalMs; diff > max(decodeAbsMs, decodeRel*st.EvalMs) || -diff > max(decodeAbsMs, decodeRel*st.EvalMs) {
		t.Errorf("decode time %.1f ms is not within max(%d ms, %.0f%%) of Ollama's eval_duration %.1f ms", decode, decodeAbsMs, decodeRel*100, st.EvalMs)
	}
	checkSplit(t, rec)
}

// checkSplit checks that Ollama's durations reach the record's time_split as the server's
// figures (its queue derived from its total), and that its TTFT there is causally possible:
// no more than the proxy's TTFT counted from when it began to send the request upstream.
func checkSplit(t *testing.T, rec record.Record) {
	t.Helper()
	st, s := rec.Server, rec.Split
	if st.Format != "ollama" || s == nil || s.PrefillMs == nil || s.DecodeMs == nil || s.LoadMs == nil || s.QueueMs == nil ||
		s.ServerTTFTMs == nil || s.UpstreamTTFTMs == nil || s.ProxyMs == nil {
		b, _ := json.Marshal(rec)
		t.Fatalf("Ollama's durations did not reach the time split: %s", b)
	}
	if *s.PrefillMs != st.PromptEvalMs || *s.DecodeMs != st.EvalMs || *s.LoadMs != st.LoadMs ||
		s.PrefillSource != record.SplitServer || s.DecodeSource != record.SplitServer || s.QueueSource != record.SplitDerived {
		t.Errorf("split %+v does not carry Ollama's %+v as the server's", *s, *st)
	}
	if q := st.TotalMs - st.LoadMs - st.PromptEvalMs - st.EvalMs; *s.QueueMs < q-2e-6 || *s.QueueMs > q+2e-6 {
		t.Errorf("queue %.6f ms, want Ollama's total less load, prompt eval and eval, %.6f ms", *s.QueueMs, q)
	}
	t.Logf("split: proxy %.2f, queue %.2f, load %.2f, prefill %.2f, decode %.2f ms; server TTFT %.2f vs upstream %.2f ms (network %.2f ms, disagree %v)",
		*s.ProxyMs, *s.QueueMs, *s.LoadMs, *s.PrefillMs, *s.DecodeMs, *s.ServerTTFTMs, *s.UpstreamTTFTMs, *s.NetworkMs, s.TTFTDisagree)
	if *s.ServerTTFTMs > *s.UpstreamTTFTMs+clockSlackMs {
		t.Errorf("Ollama's TTFT %.3f ms is longer than the proxy's from the request's send, %.3f ms", *s.ServerTTFTMs, *s.UpstreamTTFTMs)
	}
}

func tail(b []byte) string {
	if len(b) > 1500 {
		return "…" + string(b[len(b)-1500:])
	}
	return string(b)
}
