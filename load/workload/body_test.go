package workload

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/decode"
)

func TestParseExtra(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Extra
		err  bool
	}{
		{"a number stays a number", "min_tokens:128", []Extra{{"min_tokens", json.RawMessage(`128`)}}, false},
		{"a boolean stays a boolean", "ignore_eos:true", []Extra{{"ignore_eos", json.RawMessage(`true`)}}, false},
		{"plain text becomes a string", "stop:END", []Extra{{"stop", json.RawMessage(`"END"`)}}, false},
		{"JSON after the colon is kept", `response_format:{"type":"json_object"}`, []Extra{{"response_format", json.RawMessage(`{"type":"json_object"}`)}}, false},
		{"a URL keeps its colons", "callback:http://x:1/y", []Extra{{"callback", json.RawMessage(`"http://x:1/y"`)}}, false},
		{"a JSON object gives one member per key, in order", `{"b":1,"a":[2]}`, []Extra{{"b", json.RawMessage(`1`)}, {"a", json.RawMessage(`[2]`)}}, false},
		{"no colon", "ignore_eos", nil, true},
		{"empty key", ":5", nil, true},
		{"broken JSON object", `{"a":`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseExtra(tt.in)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Key != tt.want[i].Key || !bytes.Equal(got[i].Value, tt.want[i].Value) {
					t.Fatalf("got %s=%s, want %s=%s", got[i].Key, got[i].Value, tt.want[i].Key, tt.want[i].Value)
				}
			}
		})
	}
}

// TestBuildDecodes builds a body for every endpoint type and reads it back with the request
// decoder llmtap measures with: the model, stream flag, output limit and prompt must all be
// found where that API puts them.
func TestBuildDecodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		endpoint string
		api      string
		stream   bool
	}{
		{EndpointChat, "openai.chat", true},
		{EndpointCompletions, "openai.completions", false},
		{EndpointMessages, "anthropic.messages", true},
		{EndpointOllamaChat, "ollama.chat", true},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			spec := BodySpec{Endpoint: tt.endpoint, Model: "m", Stream: tt.stream}
			body, err := spec.Build("hello there", 42)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(body) {
				t.Fatalf("invalid JSON: %s", body)
			}
			req := decode.ParseRequestFor(tt.api, body, 1<<20)
			if !req.Valid || req.Model != "m" || req.Stream != tt.stream || string(req.Prompt) != "hello there" {
				t.Fatalf("decoded %+v from %s", req, body)
			}
		})
	}
}

func TestBuildMaxTokensAndExtras(t *testing.T) {
	t.Parallel()
	extra, err := ParseExtra(`{"min_tokens":128,"ignore_eos":true,"stream":false}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec BodySpec
		osl  int
		want map[string]any
		none []string
	}{
		{"chat sends max_completion_tokens, as AIPerf does", BodySpec{Endpoint: EndpointChat, Stream: true}, 7,
			map[string]any{"max_completion_tokens": 7.0, "stream_options": map[string]any{"include_usage": true}}, []string{"max_tokens"}},
		{"legacy max tokens", BodySpec{Endpoint: EndpointChat, LegacyMaxTokens: true}, 7,
			map[string]any{"max_tokens": 7.0}, []string{"max_completion_tokens", "stream_options"}},
		{"no output length sends no limit", BodySpec{Endpoint: EndpointCompletions}, 0,
			nil, []string{"max_tokens"}},
		{"the Anthropic API always gets max_tokens", BodySpec{Endpoint: EndpointMessages}, 0,
			map[string]any{"max_tokens": 4096.0}, nil},
		{"extras are typed and replace members", BodySpec{Endpoint: EndpointChat, Stream: true, Extra: extra}, 7,
			map[string]any{"min_tokens": 128.0, "ignore_eos": true, "stream": false}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Model = "m"
			body, err := tt.spec.Build("p", tt.osl)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				g, _ := json.Marshal(got[k])
				w, _ := json.Marshal(v)
				if !bytes.Equal(g, w) {
					t.Errorf("%s = %s, want %s (body %s)", k, g, w, body)
				}
			}
			for _, k := range tt.none {
				if _, ok := got[k]; ok {
					t.Errorf("%s present in %s", k, body)
				}
			}
		})
	}
	if _, err := (BodySpec{Endpoint: "nope"}).Build("p", 1); err == nil {
		t.Error("an unknown endpoint type was accepted")
	}
}

func FuzzParseExtra(f *testing.F) {
	for _, s := range []string{"min_tokens:128", "ignore_eos:true", `{"a":1}`, "k:", ":", `{"a":}`, "k:[1,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ex, err := ParseExtra(s)
		if err != nil {
			return
		}
		body, err := BodySpec{Endpoint: EndpointChat, Model: "m", Extra: ex}.Build("p", 1)
		if err != nil {
			return // a key the encoder rejects is reported, not a crash
		}
		if !json.Valid(body) {
			t.Fatalf("extra %q produced invalid JSON %s", s, body)
		}
	})
}

// TestParseExtras keeps every argument's members in order and reports every bad argument.
func TestParseExtras(t *testing.T) {
	got, err := ParseExtras([]string{"min_tokens:128", `{"a":1,"b":2}`})
	if err != nil || len(got) != 3 || got[0].Key != "min_tokens" || got[2].Key != "b" {
		t.Errorf("ParseExtras = %+v, %v; want min_tokens, a, b", got, err)
	}
	if _, err := ParseExtras([]string{"x", "ok:1", ":y"}); err == nil || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), `":y"`) {
		t.Errorf("two bad arguments gave %v; want both", err)
	}
}
