package decode

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fuzzMaxText is the text cap under fuzzing: small, so that inputs reach it.
const fuzzMaxText = 64

// seedEvents adds the events of the captured streams and the hand-written shapes of the table
// tests to a fuzz corpus.
func seedEvents(f *testing.F, files ...string) {
	for _, name := range files {
		for _, e := range splitSSE(string(readTestdata(f, name))) {
			f.Add([]byte(e.data))
		}
	}
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"reasoning_content":"r","tool_calls":[{"function":{"name":"f","arguments":"{}"}}],"refusal":"no"}}]}`,
		`{"choices":[{"index":1,"message":{"content":[{"type":"text","text":"a"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`,
		`{"error":{"message":"m","type":"t","code":1}}`,
		`{"object":"error","message":"m","code":"c"}`,
		`{"choices":[{"index":99999999999,"text":"x"}]}`,
		"data: x\n\n[DONE]\n{\"choices\":[{\"text\":\"\\ud83d\"}]}",
		`[DONE]`, ``, `{`, `[]`,
	} {
		f.Add([]byte(s))
	}
}

// checkDecoder feeds data to dec as one event, then as newline-separated events, then as a body,
// and checks the invariants every decoder keeps whatever it is given.
func checkDecoder(t *testing.T, dec ResponseDecoder, data []byte) {
	dec.(TextLimiter).SetMaxText(fuzzMaxText)
	kinds := []Kind{dec.Event(nil, data), dec.Event([]byte("error"), data)}
	for _, line := range bytes.Split(data, []byte("\n")) {
		kinds = append(kinds, dec.Event(nil, line))
	}
	kinds = append(kinds, dec.Body(data))
	for _, k := range kinds {
		if k > Malformed {
			t.Fatalf("kind %d out of range", k)
		}
	}
	r := dec.Result()
	if len(r.Text) > fuzzMaxText || len(r.ReasoningText) > fuzzMaxText {
		t.Fatalf("text %d / reasoning %d bytes over the cap %d", len(r.Text), len(r.ReasoningText), fuzzMaxText)
	}
	if len(r.ErrorMessage) > maxErrorMessage || len(r.ErrorType) > maxErrorMessage {
		t.Fatalf("error fields over the cap: %d, %d", len(r.ErrorType), len(r.ErrorMessage))
	}
	if r.Choices < 0 || r.Choices > maxChoiceIndex || r.Malformed < 0 || r.ContentEvents > len(kinds) {
		t.Fatalf("counts out of range: %+v", viewOf(r))
	}
	if json.Valid(data) && shallow(data) && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) && kinds[0] == Malformed {
		t.Fatalf("a valid JSON object was Malformed: %q", data)
	}
	dec.Reset()
	if got := viewOf(dec.Result()); got != fresh() {
		t.Fatalf("Reset left %+v", got)
	}
}

func FuzzOpenAIChat(f *testing.F) {
	seedEvents(f, append([]string{"chat.txt", "chat_sampled.txt", "mistral_thinking.txt", "openrouter_error.txt"}, corpusChatSeeds...)...)
	dec := NewOpenAIChat()
	f.Fuzz(func(t *testing.T, data []byte) { checkDecoder(t, dec, data) })
}

func FuzzOpenAICompletions(f *testing.F) {
	seedEvents(f, "completions.txt")
	dec := NewOpenAICompletions()
	f.Fuzz(func(t *testing.T, data []byte) { checkDecoder(t, dec, data) })
}

func FuzzParseRequest(f *testing.F) {
	for _, name := range []string{"chat.request.json", "completions.request.json", "chat_sampled.request.json", "native-api-chat.request.json"} {
		f.Add(readTestdata(f, name), 64)
	}
	f.Add([]byte(`{"messages":[{"content":[{"type":"text","text":"a\u00e9\ud83d\ude00"}]}],"prompt":["x",1],"n":3,"max_completion_tokens":5}`), 3)
	f.Add([]byte(`{"model":"m","messages":[{"content":"abc\u00`), 100)
	var rp RequestParser
	var reused Request
	f.Fuzz(func(t *testing.T, body []byte, maxPrompt int) {
		maxPrompt %= 1 << 16
		req := ParseRequest(body, maxPrompt)
		if len(req.Prompt) > max(maxPrompt, 0) {
			t.Fatalf("prompt %d bytes over the cap %d", len(req.Prompt), maxPrompt)
		}
		if req.N < 1 || req.MaxTokens < -1 {
			t.Fatalf("out of range: %+v", req)
		}
		var obj map[string]any
		if shallow(body) && json.Unmarshal(body, &obj) == nil && obj != nil && !req.Valid {
			t.Fatalf("a JSON object was not Valid: %q", body)
		}
		if req.Valid && req.PromptTruncated && len(req.Prompt) < maxPrompt-utf8Max {
			t.Fatalf("a complete body flagged truncated with room left: %d of %d", len(req.Prompt), maxPrompt)
		}
		rp.Parse(body, maxPrompt, &reused)
		if reused.Valid != req.Valid || reused.Model != req.Model || !bytes.Equal(reused.Prompt, req.Prompt) {
			t.Fatalf("RequestParser.Parse %+v disagrees with ParseRequest %+v", reused, req)
		}
	})
}

// shallow reports whether b cannot nest deeper than fastjson.MaxDepth (300), which
// encoding/json accepts and fastjson, by design, does not.
func shallow(b []byte) bool {
	return bytes.Count(b, []byte("{"))+bytes.Count(b, []byte("[")) < 300
}

// utf8Max is the most a prompt can fall short of its cap when the cap splits a character, plus
// the separator.
const utf8Max = 4
