package decode

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	type want struct {
		model        string
		stream       bool
		includeUsage bool
		maxTokens    int64
		n            int
		prompt       string
		truncated    bool
		valid        bool
	}
	rows := []struct {
		name, reason string
		body         string
		maxPrompt    int
		want         want
	}{
		{
			name:      "chat",
			reason:    "every field of a streaming chat request",
			body:      `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":128,"n":2,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			maxPrompt: 1024,
			want:      want{model: "m", stream: true, includeUsage: true, maxTokens: 128, n: 2, prompt: "Be brief.\nHi", valid: true},
		},
		{
			name:      "defaults",
			reason:    "an empty object: no stream, no usage, max -1, one choice",
			body:      `{}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, valid: true},
		},
		{
			name:      "max_completion_tokens wins",
			reason:    "the newer field takes precedence over max_tokens",
			body:      `{"max_tokens":10,"max_completion_tokens":20}`,
			maxPrompt: 1024,
			want:      want{maxTokens: 20, n: 1, valid: true},
		},
		{
			name:      "null max_completion_tokens falls through",
			reason:    "a null newer field does not hide max_tokens",
			body:      `{"max_completion_tokens":null,"max_tokens":10}`,
			maxPrompt: 1024,
			want:      want{maxTokens: 10, n: 1, valid: true},
		},
		{
			name:      "odd n and stream",
			reason:    "n that is zero, negative or a string means one choice; stream must be the JSON true",
			body:      `{"n":0,"stream":"true","stream_options":{"include_usage":false}}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, valid: true},
		},
		{
			name:      "content parts",
			reason:    "text parts are joined with newlines; image parts have no text; empty texts are skipped",
			body:      `{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"here"}]},{"role":"assistant","content":null,"tool_calls":[]},{"role":"user","content":""},{"role":"user","content":"ok"}]}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, prompt: "look\nhere\nok", valid: true},
		},
		{
			name:      "completions prompt string",
			reason:    "the legacy prompt string",
			body:      `{"model":"m","prompt":"Once upon a time","max_tokens":64}`,
			maxPrompt: 1024,
			want:      want{model: "m", maxTokens: 64, n: 1, prompt: "Once upon a time", valid: true},
		},
		{
			name:      "completions prompt array",
			reason:    "an array of prompt strings is joined; token-id prompts carry no text",
			body:      `{"prompt":["a","b",[1,2,3],7]}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, prompt: "a\nb", valid: true},
		},
		{
			name:      "escapes",
			reason:    "the prompt is the decoded text a tokenizer should see",
			body:      `{"prompt":"line\none \u00e9 \"q\""}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, prompt: "line\none é \"q\"", valid: true},
		},
		{
			name:      "prompt over the cap",
			reason:    "the prompt is cut at maxPrompt and flagged",
			body:      `{"messages":[{"content":"Once upon"},{"content":"a time"}]}`,
			maxPrompt: 5,
			want:      want{maxTokens: -1, n: 1, prompt: "Once ", truncated: true, valid: true},
		},
		{
			name:      "cap between messages",
			reason:    "a cap reached exactly at the end of a message drops the next one and says so",
			body:      `{"messages":[{"content":"abc"},{"content":"d"}]}`,
			maxPrompt: 3,
			want:      want{maxTokens: -1, n: 1, prompt: "abc", truncated: true, valid: true},
		},
		{
			name:      "cap on a rune boundary",
			reason:    "a character the cap would split is dropped whole",
			body:      `{"prompt":"abé"}`,
			maxPrompt: 3,
			want:      want{maxTokens: -1, n: 1, prompt: "ab", truncated: true, valid: true},
		},
		{
			name:      "no prompt wanted",
			reason:    "maxPrompt 0 keeps no prompt and is not truncation",
			body:      `{"model":"m","prompt":"x"}`,
			maxPrompt: 0,
			want:      want{model: "m", maxTokens: -1, n: 1, valid: true},
		},
		{
			name:      "not JSON",
			reason:    "a body that is not JSON is not valid and keeps the defaults",
			body:      `model=m&prompt=x`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1},
		},
		{
			name:      "JSON array",
			reason:    "a batch array is not a request object",
			body:      `[{"model":"m"}]`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1},
		},
		{
			name:      "empty body",
			reason:    "no body is not valid",
			body:      ``,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1},
		},
		{
			name:      "complete but invalid",
			reason:    "an invalid body whose brackets all close is not mistaken for a cut one",
			body:      `{"model":"m","prompt":nope}`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1},
		},
		{
			name:      "cut inside the prompt",
			reason:    "a captured prefix: fields that arrived are read, the prompt so far is kept, and the body is not valid",
			body:      `{"model":"m","stream":true,"max_tokens":64,"messages":[{"role":"system","content":"S"},{"role":"user","content":"Once upon a ti`,
			maxPrompt: 1024,
			want:      want{model: "m", stream: true, maxTokens: 64, n: 1, prompt: "S\nOnce upon a ti", truncated: true},
		},
		{
			name:      "cut inside the model",
			reason:    "a half model name would be wrong, so it is dropped",
			body:      `{"stream":true,"model":"stori`,
			maxPrompt: 1024,
			want:      want{stream: true, maxTokens: -1, n: 1, truncated: true},
		},
		{
			name:      "cut inside a number",
			reason:    "12 may be the start of 128, so a number at the cut is dropped",
			body:      `{"model":"m","max_tokens":12`,
			maxPrompt: 1024,
			want:      want{model: "m", maxTokens: -1, n: 1, truncated: true},
		},
		{
			name:      "cut inside an escape",
			reason:    "half an escape sequence is dropped",
			body:      `{"prompt":"ab\u00`,
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, prompt: "ab", truncated: true},
		},
		{
			name:      "cut inside a character",
			reason:    "half a UTF-8 character is dropped",
			body:      "{\"prompt\":\"ab\xc3",
			maxPrompt: 1024,
			want:      want{maxTokens: -1, n: 1, prompt: "ab", truncated: true},
		},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			g := ParseRequest([]byte(r.body), r.maxPrompt)
			got := want{g.Model, g.Stream, g.IncludeUsage, g.MaxTokens, g.N, string(g.Prompt), g.PromptTruncated, g.Valid}
			if got != r.want {
				t.Errorf("%s\ngot  %+v\nwant %+v", r.reason, got, r.want)
			}
		})
	}
}

func TestRequestParserReuse(t *testing.T) {
	t.Parallel()
	var rp RequestParser
	var req Request
	rp.Parse([]byte(`{"model":"m","messages":[{"content":"hello"}]}`), 64, &req)
	prompt, model := req.Prompt, req.Model
	rp.Parse([]byte(`{"model":"m","messages":[{"content":"bye"}]}`), 64, &req)
	if string(req.Prompt) != "bye" || &req.Prompt[0] != &prompt[0] {
		t.Errorf("Parse must reuse the prompt buffer: got %q", req.Prompt)
	}
	if req.Model != model || req.MaxTokens != -1 || !req.Valid {
		t.Errorf("second parse = %+v", req)
	}
	rp.Parse([]byte(`nope`), 64, &req)
	if req.Valid || req.Model != "" || len(req.Prompt) != 0 {
		t.Errorf("an invalid body must clear the previous request: %+v", req)
	}
}

// TestParseRequestPrefixes parses every prefix of some requests, as a proxy that captures only
// the first N bytes would: nothing may panic, a prefix is never Valid, the prompt read from a
// prefix is a prefix of the full prompt, and the other fields are either the full body's or
// the defaults.
func TestParseRequestPrefixes(t *testing.T) {
	t.Parallel()
	bodies := []string{
		strings.TrimSpace(string(readTestdata(t, "chat.request.json"))),
		strings.TrimSpace(string(readTestdata(t, "completions.request.json"))),
		`{"model":"gpt-x","n":2,"max_completion_tokens":300,"messages":[{"role":"system","content":"You are \"terse\".\n"},` +
			`{"role":"user","content":[{"type":"text","text":"caf\u00e9 ☕ \ud83d\ude00"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"b\\c"}]}],` +
			`"stream":true,"stream_options":{"include_usage":true},"stop":["\n\n","END"],"prompt":["p1","p2"]}`,
	}
	for _, body := range bodies {
		full := ParseRequest([]byte(body), 1<<20)
		if !full.Valid {
			t.Fatalf("full body not valid: %s", body)
		}
		for n := 0; n < len(body); n++ {
			got := ParseRequest([]byte(body[:n]), 1<<20)
			if got.Valid {
				t.Fatalf("prefix %q is Valid", body[:n])
			}
			if !bytes.HasPrefix(full.Prompt, got.Prompt) {
				t.Fatalf("prefix %q gave prompt %q, not a prefix of %q", body[:n], got.Prompt, full.Prompt)
			}
			if len(got.Prompt) > 0 && !got.PromptTruncated {
				t.Fatalf("prefix %q kept a prompt without flagging it truncated", body[:n])
			}
			if (got.Model != "" && got.Model != full.Model) || (got.MaxTokens != -1 && got.MaxTokens != full.MaxTokens) ||
				(got.N != 1 && got.N != full.N) || (got.Stream && !full.Stream) || (got.IncludeUsage && !full.IncludeUsage) {
				t.Fatalf("prefix %q gave %+v, which disagrees with the full body %+v", body[:n], got, full)
			}
		}
		if last := ParseRequest([]byte(body[:len(body)-1]), 1<<20); !bytes.Equal(last.Prompt, full.Prompt) ||
			last.Model != full.Model || last.MaxTokens != full.MaxTokens {
			t.Errorf("the body minus its last byte should yield everything: %+v vs %+v", last, full)
		}
	}
}
