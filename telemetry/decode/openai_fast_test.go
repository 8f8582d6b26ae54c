package decode

import (
	"bytes"
	"strings"
	"testing"
)

// fastSeeds are chunk shapes for the differential fuzz target beyond the captures: the shapes of
// the table tests, and the corners where the fast path must either read exactly what fastjson
// reads or give up (escapes, repeated keys, numbers fastjson reads best effort, nesting,
// whitespace, tails).
var fastSeeds = []string{
	// Shapes of TestOpenAIChatEvents and TestOpenAICompletionsEvents.
	chunk(delta(0, `{"role":"assistant","content":""}`, "null")),
	chunk(delta(0, `{"role":"assistant","content":"Hello"}`, "null")),
	chunk(delta(0, `{"reasoning_content":"think"}`, "null")),
	chunk(delta(0, `{"reasoning":"think","content":"x"}`, "null")),
	chunk(delta(0, `{"reasoning_content":"","reasoning":"alt"}`, "null")),
	chunk(delta(0, `{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`, "null")),
	chunk(delta(0, `{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}},{"index":1,"function":{"name":"f2","arguments":{"a":1}}}]}`, "null")),
	chunk(delta(0, `{"tool_calls":[{"index":0}]}`, "null")),
	chunk(delta(0, `{"function_call":{"name":"f","arguments":"{}"}}`, "null")),
	chunk(delta(0, `{"refusal":"I can't","content":"x"}`, "null")),
	chunk(delta(0, `{}`, `"length"`)),
	chunk(delta(0, `{}`, `"weird_reason"`)),
	chunk(delta(1, `{"content":"b"}`, `"stop"`) + "," + delta(0, `{"content":"a"}`, "null")),
	chunk(`{"delta":{"content":"no index"}}`),
	chunk(delta(0, `{"content":null}`, "null")),
	chunk(delta(0, `{"content":7}`, "null")),
	chunk(delta(0, `{"content":{"a":[1,2,{"b":null}]}}`, "null")),
	chunk(delta(0, `{"content":"a\nb\u00e9\ud83d\ude00\"q\""}`, "null")),
	chunk(delta(0, `{"content":"\ud83d \udc00\ud83dx \u12 \q \\\/ \b\f\r\t \uD83D\uDE00"}`, `"st\u006fp"`)),
	`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}`,
	`{"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
	`{"choices":[],"usage":{"prompt_tokens":1.5,"completion_tokens":-2,"total_tokens":"3"}}`,
	`{"choices":[],"usage":{"prompt_tokens":null,"completion_tokens_details":null,"prompt_tokens_details":[1]}}`,
	`{"choices":[],"usage":null}`,
	`{"model":"a","choices":[]}`,
	`{"model":"","choices":[]}`,
	`{"model":"m\u00e9","choices":null}`,
	`{"choices":[{"index":0,"text":"hi"}]}`,
	`{"id":"cmpl-1","object":"text_completion","created":1,"choices":[{"text":"a","index":0,"finish_reason":null}],"model":"m","usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`,
	`{"choices":[{"text":"a","index":0},{"text":"","index":1}]}`,
	`{"choices":[{"index":1,"message":{"content":"body shape"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"part"}]}}]}`,
	chunk(delta(0, `{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"},{"type":"reference","reference_ids":[1]}]},{"type":"text","text":"a"}]}`, "null")),
	chunk(delta(0, `{"content":[{"type":"thinking","thinking":"plain"},{"type":"thinking","thinking":[{"text":""}]},{"type":"thinking"}]}`, "null")),
	`{"model":"m","error":{"code":"server_error","message":"gone"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
	`{"object":"error","message":"m","usage":{"prompt_tokens":1,"completion_tokens":0}}`,
	`{"error":{"message":"boom","type":"server_error"}}`,
	`{"object":"error","message":"m","type":"BadRequestError","code":400}`,
	`{"error":"plain"}`,
	`{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
	`{"id":"x","object":"chat.completion.chunk"}`,
	`{}`, ` { } `, `{"choices":[]} x`, `{"choices":[],}`, `{"a":-}`, `{"a":-1}`, `{"a":1-2e+}`,
	`{"a":nan}`, `{"a":NaN}`, `{"a":-inf}`, `{"a":+1}`, `{"a":.5}`, `{"a":tru}`, `{"a":nul}`,
	`{"choices":[{"index":01,"delta":{"content":"x"}}]}`,
	`{"choices":[{"index":1e0,"delta":{"content":"x"}}]}`,
	`{"choices":[{"index":"0","delta":{"content":"x"},"finish_reason":"stop"}]}`,
	`{"choices":[{"index":99999999999,"text":"x"}]}`,
	`{"choices":[{"index":1023,"text":"x"},{"index":1024,"text":"y"}]}`,
	`{"choices":[{"index":0,"index":1,"delta":{"content":"x"}}]}`,
	`{"model":"a","model":"b","choices":[]}`,
	`{"object":"x","object":"error","message":"m"}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"ch\u006fices":[{"delta":{"content":"escaped key"}}]}`,
	`{"choices":[{"delta":{"c\"":"x","content":"y"}}]}`,
	"{\n\t\"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"ws\" } } ] \r\n}",
	`{"choices":[{"delta":{"content":"x"}},1,null,"s",[]]}`,
	`{"choices":[{"delta":{"content":"1"}},{"delta":{"content":"2"}},{"delta":{"content":"3"}},{"delta":{"content":"4"}},{"delta":{"content":"5"}}]}`,
	`{"choices":[{"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-0.1,"bytes":[120],"top_logprobs":[]}]}}]}`,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"ctl\x01\xff\"}}]}",
	`{"choices":[{"delta":{"content":"unterminated}]}`,
	`{"choices":[{"delta":{"content":"x\"}}]}`,
	`[DONE]`, ``, `{`, `[]`, `"s"`, `null`,
}

// FuzzChatFastVsFull is the proof of the fast path: the chat and completions decoders with it
// and without it (fold only) must return the same kind for every event and end with the same
// result. An input is a sequence of events, one per line; the cap byte varies the text cap so
// that truncation is compared too.
func FuzzChatFastVsFull(f *testing.F) {
	for _, name := range append([]string{"chat.txt", "chat_sampled.txt", "completions.txt", "mistral_thinking.txt", "openrouter_error.txt"}, corpusChatSeeds...) {
		var all []byte
		for _, e := range splitSSE(string(readTestdata(f, name))) {
			f.Add([]byte(e.data), false, uint8(0))
			all = append(append(all, e.data...), '\n')
		}
		f.Add(all, name == "completions.txt", uint8(0))
		f.Add(all, false, uint8(40))
	}
	for _, s := range fastSeeds {
		f.Add([]byte(s), false, uint8(0))
		f.Add([]byte(s), true, uint8(3))
	}
	f.Add([]byte(chunk(delta(0, `{"content":"abcdef"}`, "null"))+"\n"+chunk(delta(0, `{"reasoning":"héllo"}`, "null"))), false, uint8(5))
	fast, full := newOpenAI(APIOpenAIChat), newOpenAI(APIOpenAIChat)
	full.fullOnly = true
	f.Fuzz(func(t *testing.T, data []byte, completions bool, maxText uint8) {
		api := APIOpenAIChat
		if completions {
			api = APIOpenAICompletions
		}
		fast.api, full.api = api, api
		fast.Reset()
		full.Reset()
		if maxText != 0 {
			fast.SetMaxText(int(maxText))
			full.SetMaxText(int(maxText))
		} else {
			fast.SetMaxText(MaxText)
			full.SetMaxText(MaxText)
		}
		compareFastFull(t, fast, full, data)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			compareFastFull(t, fast, full, line)
		}
	})
}

// compareFastFull feeds one event to both decoders and fails on any difference.
func compareFastFull(t *testing.T, fast, full *openAI, data []byte) {
	t.Helper()
	kf, ku := fast.Event(nil, data), full.Event(nil, data)
	if kf != ku {
		t.Fatalf("event %q: fast path %v, fold %v", data, kf, ku)
	}
	if vf, vu := viewOf(fast.Result()), viewOf(full.Result()); vf != vu {
		t.Fatalf("after event %q:\nfast path %+v\nfold      %+v", data, vf, vu)
	}
	if rf, ru := fast.Result(), full.Result(); rf.Finished != ru.Finished || rf.Ended != ru.Ended {
		t.Fatalf("after event %q: fast path finished %d ended %v, fold %d %v", data, rf.Finished, rf.Ended, ru.Finished, ru.Ended)
	}
}

// TestChatFastPathTaken checks which chunks the fast path reads itself. The differential fuzz
// target proves that its answers equal fold's; this test makes sure it is not correct merely by
// falling back, for the shapes the servers actually stream.
func TestChatFastPathTaken(t *testing.T) {
	t.Parallel()
	rows := []struct {
		name, data, reason string
		fast               bool
	}{
		{"content chunk", chunk(delta(0, `{"role":"assistant","content":" there"}`, "null")), "the chunk of every token", true},
		{"escaped content", chunk(delta(0, `{"content":"a\n\"b\" \u00e9\ud83d\ude00"}`, "null")), "newlines and quotes are common in output text", true},
		{"reasoning", chunk(delta(0, `{"reasoning_content":"hmm","content":null}`, "null")), "reasoning models stream this before content", true},
		{"tool call", chunk(delta(0, `{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]}`, "null")), "agent workloads stream tool calls", true},
		{"finish", chunk(delta(0, `{}`, `"stop"`)), "the last chunk of every choice", true},
		{"usage", `{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":128,"total_tokens":133,"prompt_tokens_details":null}}`, "include_usage sends it once, continuous usage stats on every chunk", true},
		{"completions", `{"id":"c","object":"text_completion","choices":[{"text":"x","index":0,"finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`, "Ollama's completions chunk carries a zeroed usage", true},
		{"logprobs", chunk(`{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-0.5,"bytes":[120]}]}}`), "unknown members are skipped, nested or not", true},
		{"error", `{"error":{"message":"boom"}}`, "errors are read by fold", false},
		{"vLLM error", `{"object":"error","message":"boom"}`, "errors are read by fold", false},
		{"invalid", `{"choices":[`, "fold counts it Malformed", false},
		{"tail", `{"choices":[]}x`, "fastjson refuses a tail", false},
		{"lone minus", `{"created":-}`, "fastjson refuses a lone sign", false},
		{"repeated key", `{"model":"a","model":"b"}`, "fold's Visit and Get disagree on which wins", false},
		{"escaped key", `{"mod\u0065l":"a"}`, "keys are compared raw", false},
		{"content parts", chunk(delta(0, `{"content":[{"type":"text","text":"x"}]}`, "null")), "rare; fold reads them", false},
		{"thinking parts", chunk(delta(0, `{"content":[{"type":"thinking","thinking":[{"type":"text","text":"x"}]}]}`, "null")), "Mistral's reasoning: fold reads it", false},
		{"error with usage", `{"error":{"message":"gone"},"usage":{"prompt_tokens":1,"completion_tokens":2}}`, "errors are read by fold, usage with them", false},
		{"message", `{"choices":[{"message":{"content":"x"}}]}`, "a body's shape: fold picks delta or message", false},
		{"float index", `{"choices":[{"index":0.0,"delta":{"content":"x"}}]}`, "fastjson reads it best effort", false},
		{"too many choices", `{"choices":[{},{},{},{},{}]}`, "more choices than the scanner records", false},
	}
	var s chatScan
	for _, r := range rows {
		if got := s.scan([]byte(r.data)); got != r.fast {
			t.Errorf("%s: %s: fast path taken = %v, want %v", r.name, r.reason, got, r.fast)
		}
	}
}

// TestAppendUnescaped checks the decoding of escapes against the cases fastjson keeps as they
// are, which a strict decoder would reject.
func TestAppendUnescaped(t *testing.T) {
	t.Parallel()
	rows := []struct{ in, want, reason string }{
		{`plain`, "plain", "no escape is copied"},
		{`a\nb\t\"\\\/`, "a\nb\t\"\\/", "the short escapes"},
		{`\u00e9\u20AC`, "é€", "\\u in both cases of hex digits"},
		{`\ud83d\ude00`, "😀", "a surrogate pair is one character"},
		{`\ud83dx`, `\ud83dx`, "a lone high surrogate is kept"},
		{`\ud83d\u0041`, "\uFFFD", "a high surrogate with a non-surrogate decodes to U+FFFD, as utf16.DecodeRune does"},
		{`\ud83d\uZZZZ`, `\ud83d\uZZZZ`, "an invalid second escape keeps both"},
		{`\u12`, `\u12`, "a short \\u is kept"},
		{`\q`, `\q`, "an unknown escape is kept"},
	}
	for _, r := range rows {
		if got := string(appendUnescaped(nil, []byte(r.in))); got != r.want {
			t.Errorf("%q: %s: got %q, want %q", r.in, r.reason, got, r.want)
		}
	}
}

// benchEventsFull is benchEvents with the fast path off: the decoder as it was before it, fold
// on every event, for comparison.
func benchEventsFull(b *testing.B, api, file string) {
	var events [][]byte
	size := 0
	for _, e := range splitSSE(string(readTestdata(b, file))) {
		events = append(events, []byte(e.data))
		size += len(e.data)
	}
	dec := newOpenAI(api)
	dec.fullOnly = true
	b.SetBytes(int64(size / len(events)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dec.Event(nil, events[i])
		if i++; i == len(events) {
			i = 0
			dec.Reset()
		}
	}
}

// BenchmarkChatEventFull is BenchmarkChatEvent without the fast path.
func BenchmarkChatEventFull(b *testing.B) { benchEventsFull(b, APIOpenAIChat, "chat.txt") }

// BenchmarkCompletionsEventFull is BenchmarkCompletionsEvent without the fast path.
func BenchmarkCompletionsEventFull(b *testing.B) {
	benchEventsFull(b, APIOpenAICompletions, "completions.txt")
}

// TestChatRescan feeds streams whose chunks differ in one string, in ways that keep or break
// the structure around it, and checks that the decoding by difference agrees with fold after
// every chunk and is taken where it should be.
func TestChatRescan(t *testing.T) {
	t.Parallel()
	vllm := func(content, finish string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":` + content + `},"logprobs":null,"finish_reason":` + finish + `}]}`
	}
	tool := func(args string) string {
		return chunk(delta(0, `{"tool_calls":[{"index":0,"function":{"arguments":`+args+`}}]}`, "null"))
	}
	streams := []struct {
		name    string
		chunks  []string
		rescans int // how many chunks are decoded by difference
	}{
		{"tokens of every length", []string{vllm(`"a"`, "null"), vllm(`" longer token"`, "null"), vllm(`""`, "null"), vllm(`"x"`, "null"), vllm(`"x"`, "null")}, 4},
		{"escapes and quotes", []string{vllm(`"a"`, "null"), vllm(`"\"b\""`, "null"), vllm(`"\\"`, "null"), vllm(`"\u00e9\n"`, "null")}, 3},
		{"an unescaped quote breaks the structure", []string{vllm(`"a"`, "null"), vllm(`"b"c"`, "null"), vllm(`"d"`, "null"), vllm(`"e"`, "null")}, 1},
		{"null content and the finish", []string{vllm(`"a"`, "null"), vllm(`null`, "null"), vllm(`"b"`, "null"), vllm(`"b"`, `"stop"`), vllm(`"b"`, `"length"`), vllm(`""`, `"stop"`)}, 1},
		// The finish reason after the token moves with its length, and is then what changes.
		{"spans after the token shift", []string{vllm(`"a"`, `"stop"`), vllm(`"abc"`, `"stop"`), vllm(`"b"`, `"stop"`), vllm(`"b"`, `"length"`), vllm(`"bcd"`, `"length"`), vllm(`"bcd"`, `"stop"`)}, 5},
		{"tool arguments", []string{tool(`""`), tool(`"{\"a\":"`), tool(`"1}"`)}, 2},
		{"created changes", []string{vllm(`"a"`, "null"), strings.Replace(vllm(`"b"`, "null"), "1700000000", "1700000001", 1), vllm(`"c"`, "null")}, 0},
		{"truncated after the token", []string{vllm(`"a"`, "null"), vllm(`"b"`, "null")[:120], vllm(`"c"`, "null")}, 0},
	}
	for _, st := range streams {
		t.Run(st.name, func(t *testing.T) {
			fast, full := newOpenAI(APIOpenAIChat), newOpenAI(APIOpenAIChat)
			full.fullOnly = true
			for _, c := range st.chunks {
				compareFastFull(t, fast, full, []byte(c))
			}
			if fast.fast.rescans != st.rescans {
				t.Fatalf("%d chunks decoded by difference, want %d", fast.fast.rescans, st.rescans)
			}
		})
	}
}

// TestOpenAIModelCopiedOncePerDecoder: a pooled decoder that serves one model copies its name
// once in its life, not once per response (base.setModel), on the fast and the full path.
func TestOpenAIModelCopiedOncePerDecoder(t *testing.T) { // not parallel: AllocsPerRun
	ev := []byte(`{"id":"x","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`)
	for _, full := range []bool{false, true} {
		d := newOpenAI(APIOpenAIChat)
		d.fullOnly = full
		d.Event(nil, ev)
		allocs := testing.AllocsPerRun(100, func() {
			d.Reset()
			d.Event(nil, ev)
		})
		if got := d.Result().Model; got != "gpt-4o-mini-2024-07-18" {
			t.Fatalf("full path %v: model %q", full, got)
		}
		if allocs != 0 {
			t.Errorf("full path %v: %v allocations per response, want 0", full, allocs)
		}
	}
}
