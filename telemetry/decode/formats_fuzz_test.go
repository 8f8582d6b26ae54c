package decode

import (
	"testing"
)

// seedFormat adds the events of recorded streams, with their SSE types, and extra shapes to a
// fuzz corpus of (type, data) pairs.
func seedFormat(f *testing.F, ctype string, files []string, extra ...ev) {
	for _, file := range files {
		for _, e := range goldenEvents(f, file, ctype) {
			f.Add(e.typ, []byte(e.data))
		}
	}
	for _, e := range extra {
		f.Add(e.typ, []byte(e.data))
	}
	for _, s := range []string{``, `{`, `[]`, `null`, `{"error":null}`, `{"error":{"message":"m","type":"t"}}`} {
		f.Add("", []byte(s))
		f.Add("error", []byte(s))
	}
}

// checkFormat runs the shared invariants of checkDecoder, then feeds data once more with an SSE
// type, and checks that Reset also clears the fields the other APIs' decoders add.
func checkFormat(t *testing.T, dec ResponseDecoder, typ string, data []byte) {
	checkDecoder(t, dec, data)
	if k := dec.Event([]byte(typ), data); k > Malformed {
		t.Fatalf("kind %d out of range", k)
	}
	dec.Body(data)
	r := dec.Result()
	if len(r.Text) > fuzzMaxText || len(r.ReasoningText) > fuzzMaxText {
		t.Fatalf("text over the cap: %d, %d", len(r.Text), len(r.ReasoningText))
	}
	if r.ServerTimings.LoadDuration < 0 || r.ServerTimings.TotalDuration < 0 || r.ServerTimings.EvalCount < 0 {
		t.Fatalf("negative server timings: %+v", r.ServerTimings)
	}
	if r.Usage.InputTokens < -1 || r.Usage.OutputTokens < -1 || r.Usage.CachedTokens < -1 {
		t.Fatalf("usage out of range: %+v", r.Usage)
	}
	dec.Reset()
	if got := xviewOf(dec.Result()); got != xfresh() {
		t.Fatalf("Reset left %+v", got)
	}
}

func FuzzAnthropic(f *testing.F) {
	seedFormat(f, "text/event-stream", []string{"anthropic.txt", "anthropic_compaction.txt", "corpus_anthropic_mcp.txt", "corpus_anthropic_thinking_tokens.txt"},
		te("content_block_start", `{"type":"content_block_start","content_block":{"type":"tool_use","name":"f","input":{"a":[1,{"b":"\u00e9"}]}}}`),
		te("message_delta", `{"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"input_tokens":1e3,"cache_read_input_tokens":-5,"output_tokens":2.5}}`),
		d(`{"type":"message","content":[{"type":"redacted_thinking","data":"x"},{"type":"text","text":"a"}],"usage":{"output_tokens":1}}`),
		d(`{"type":"message","content":[{"type":"compaction","content":"s"}],"usage":{"output_tokens":1,"iterations":[{"output_tokens":2},null,{"input_tokens":"x"}]}}`),
	)
	dec := NewAnthropic()
	f.Fuzz(func(t *testing.T, typ string, data []byte) { checkFormat(t, dec, typ, data) })
}

func FuzzResponses(f *testing.F) {
	seedFormat(f, "text/event-stream", []string{"responses.txt", "responses_tool.txt"},
		te("response.failed", `{"type":"response.failed","response":{"status":"failed","error":{"code":1,"message":"m"}}}`),
		te("error", `{"type":"error","code":"c","message":"m"}`),
		d(`{"object":"response","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[{"type":"custom_tool_call","name":"n","input":"i"}]}`),
	)
	dec := NewResponses()
	f.Fuzz(func(t *testing.T, typ string, data []byte) { checkFormat(t, dec, typ, data) })
}

func FuzzTGI(f *testing.F) {
	seedFormat(f, "text/event-stream", []string{"tgi.txt", "tgi_length.txt"},
		d(`[{"generated_text":"x","details":{"generated_tokens":1}}]`),
		d(`{"error":"e","error_type":"validation"}`),
		d(`{"token":{"text":"\ud83d","special":"no"},"details":[]}`),
	)
	dec := NewTGI()
	f.Fuzz(func(t *testing.T, typ string, data []byte) { checkFormat(t, dec, typ, data) })
}

func FuzzOllama(f *testing.F) {
	seedFormat(f, "application/x-ndjson", []string{"native-api-chat.txt", "ollama-generate.txt"},
		d(`{"message":{"content":"","tool_calls":[{"function":{"name":"f","arguments":{"x":[1,2]}}},{"function":null}]},"done":false}`),
		d(`{"response":"x","done":true,"eval_count":-1,"total_duration":1e30}`),
		d(`{"error":"boom"}`),
	)
	dec := NewOllamaChat()
	f.Fuzz(func(t *testing.T, typ string, data []byte) { checkFormat(t, dec, typ, data) })
}

func FuzzEmbeddings(f *testing.F) {
	seedFormat(f, "application/json", nil,
		d(`{"object":"list","data":[{"embedding":[0.1]}],"model":"m","usage":{"prompt_tokens":8,"total_tokens":8}}`),
		d(`{"model":"m","embeddings":[[0.1]],"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}`),
		d(`{"usage":{"total_tokens":56},"results":[{"index":0,"relevance_score":0.9}]}`),
		d(`[[0.1,0.2]]`),
	)
	dec := NewEmbeddings()
	f.Fuzz(func(t *testing.T, typ string, data []byte) { checkFormat(t, dec, typ, data) })
}

func FuzzParseRequestFor(f *testing.F) {
	for _, s := range []string{
		`{"options":{"num_predict":32},"messages":[{"content":"Hi"}],"system":"s","prompt":"p"}`,
		`{"system":[{"type":"text","text":"s"}],"messages":[{"content":[{"type":"tool_result","content":[{"text":"r"}]}]}]}`,
		`{"instructions":"i","input":[{"content":"c","output":"o"}],"max_output_tokens":5}`,
		`{"inputs":"x","parameters":{"max_new_tokens":3}}`,
		`{"query":"q","documents":["a",{"text":"b"}],"texts":["t"],"input":["e",[1]]}`,
		`{"model":"m","prompt":"cut \u00`,
	} {
		for i := range apis {
			f.Add(i, []byte(s), 16)
		}
	}
	f.Fuzz(func(t *testing.T, api int, body []byte, maxPrompt int) {
		name := APIs()[uint(api)%uint(len(apis)+1)]
		maxPrompt %= 1 << 16
		req := ParseRequestFor(name, body, maxPrompt)
		if len(req.Prompt) > max(maxPrompt, 0) || req.N < 1 || req.MaxTokens < -1 {
			t.Fatalf("%s: out of range: %+v", name, req)
		}
		var rp RequestParser
		var again Request
		rp.ParseFor(name, body, maxPrompt, &again)
		if again.Valid != req.Valid || again.Stream != req.Stream || string(again.Prompt) != string(req.Prompt) {
			t.Fatalf("%s: ParseFor %+v disagrees with ParseRequestFor %+v", name, again, req)
		}
	})
}
