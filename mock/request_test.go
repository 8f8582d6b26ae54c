package mock

import (
	"errors"
	"testing"
)

func TestRequestLimitsAndPrompt(t *testing.T) {
	cfg := Config{MaxOutputTokens: 100}.withDefaults()
	tests := []struct {
		name       string
		ep         endpoint
		body       string
		want       limits
		wantPrompt int // with PromptApprox, ceil(bytes/4)
		wantErr    bool
		why        string
	}{
		{"defaults", chatEndpoint, `{"messages":[{"role":"user","content":"abcdefgh"}]}`, limits{max: 64, n: 1}, 2, false, "OutputTokens when nothing is asked"},
		{"max_tokens", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"max_tokens":7}`, limits{max: 7, explicit: true, n: 1}, 1, false, "an explicit cap"},
		{"min over max", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"max_tokens":7,"min_tokens":9}`, limits{max: 7, min: 7, explicit: true, n: 1}, 1, false, "min is clamped to max"},
		{"null content", chatEndpoint, `{"messages":[{"role":"assistant","content":null},{"role":"user","content":"abcde"}]}`, limits{max: 64, n: 1}, 2, false, "assistant tool-call messages have null content"},
		{"parts", chatEndpoint, `{"messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url"}]}]}`, limits{max: 64, n: 1}, 1, false, "only text parts count"},
		{"token ids", completionEndpoint, `{"prompt":[1,2,3]}`, limits{max: 64, n: 1}, 3, false, "token-id prompts count their ids"},
		{"one string array", completionEndpoint, `{"prompt":["abcdefghi"]}`, limits{max: 64, n: 1}, 3, false, "an array of one prompt"},
		{"max too big", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"max_tokens":101}`, limits{}, 0, true, "over MaxOutputTokens"},
		{"negative min", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"min_tokens":-1}`, limits{}, 0, true, "negative min_tokens"},
		{"n too big", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"n":129}`, limits{}, 0, true, "n over MaxChoices"},
		{"float max", chatEndpoint, `{"messages":[{"role":"user","content":"a"}],"max_tokens":1.5}`, limits{}, 0, true, "token counts are integers"},
		{"nested ids", completionEndpoint, `{"prompt":[[1,2],[3]]}`, limits{}, 0, true, "batches of token-id prompts"},
		{"negative id", completionEndpoint, `{"prompt":[-1]}`, limits{}, 0, true, "token ids are non-negative"},
		{"empty array", completionEndpoint, `{"prompt":[]}`, limits{}, 0, true, "no prompt at all"},
	}
	for _, tt := range tests {
		req, err := parseRequest([]byte(tt.body), tt.ep)
		var l limits
		if err == nil {
			l, err = req.limits(&cfg)
		}
		p := 0
		if err == nil {
			p, err = req.promptTokens(tt.ep, PromptApprox)
		}
		if tt.wantErr {
			if !errors.Is(err, errBadRequest) {
				t.Errorf("%s: error %v, want a bad request (%s)", tt.name, err, tt.why)
			}
			continue
		}
		if err != nil || l != tt.want || p != tt.wantPrompt {
			t.Errorf("%s: limits %+v prompt %d err %v, want %+v and %d (%s)", tt.name, l, p, err, tt.want, tt.wantPrompt, tt.why)
		}
	}
}

// FuzzParseRequest feeds arbitrary bodies through everything the server
// does before planning: it must never panic, and an accepted request must
// have sane limits and a non-negative prompt count.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"hello"}],"stream":true,"max_tokens":5}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"n":2,"min_tokens":3}`,
		`{"prompt":"abc","max_completion_tokens":4,"ignore_eos":true}`,
		`{"prompt":[1,2,3]}`, `{"prompt":["a"]}`, `{"prompt":[[1]]}`, `{"messages":[{"content":null}]}`,
		`{"messages":[{"content":"\ud800"}]}`, `[]`, `null`, `{"max_tokens":-5}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	cfg := Config{MaxOutputTokens: 1000}.withDefaults()
	f.Fuzz(func(t *testing.T, body []byte, completions bool) {
		ep := chatEndpoint
		if completions {
			ep = completionEndpoint
		}
		req, err := parseRequest(body, ep)
		if err != nil {
			if !errors.Is(err, errBadRequest) {
				t.Fatalf("parse error %v is not a bad request", err)
			}
			return
		}
		l, err := req.limits(&cfg)
		if err != nil {
			return
		}
		if l.max < 1 || l.max > cfg.MaxOutputTokens || l.min < 0 || l.min > l.max || l.n < 1 || l.n > MaxChoices {
			t.Fatalf("accepted limits out of range: %+v", l)
		}
		for _, c := range []PromptCounter{PromptApprox, PromptO200k} {
			if p, err := req.promptTokens(ep, c); err == nil && p < 0 {
				t.Fatalf("negative prompt count %d", p)
			}
		}
	})
}
