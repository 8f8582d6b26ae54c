package mock

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// anthropicEvent is one named SSE event of a Messages stream.
type anthropicEvent struct {
	name string
	data map[string]any
}

// anthropicEvents splits a Messages stream into its events, each exactly an event: line and
// a data: line whose type repeats the event name.
func anthropicEvents(t *testing.T, body []byte) []anthropicEvent {
	t.Helper()
	if !strings.HasSuffix(string(body), "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", tail(body))
	}
	var out []anthropicEvent
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		name, ok2 := strings.CutPrefix(name, "event: ")
		if !ok || !ok2 || strings.Contains(data, "\n") {
			t.Fatalf("event is not one event: line and one data: line: %q", ev)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("data is not JSON: %v: %s", err, data)
		}
		if m["type"] != name {
			t.Fatalf("data type %v differs from the event name %q", m["type"], name)
		}
		out = append(out, anthropicEvent{name, m})
	}
	return out
}

func TestMessagesStream(t *testing.T) {
	tests := []struct {
		name      string
		perChunk  int
		maxTokens string // the request's max_tokens member, or ""
		tokens    int
		stop      string
		deltas    []int // tokens per text_delta
	}{
		{"max_tokens reached is max_tokens, a delta per token", 1, `"max_tokens":4,`, 4, "max_tokens", []int{1, 1, 1, 1}},
		{"the configured length is a natural end_turn", 1, "", 3, "end_turn", []int{1, 1, 1}},
		{"chunks of three with a shorter last one", 3, `"max_tokens":7,`, 7, "max_tokens", []int{3, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newTestServer(t, Config{OutputTokens: 3, TokensPerChunk: tt.perChunk, LogEvents: true})
			body := `{"model":"claude-mock",` + tt.maxTokens + `"stream":true,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Tell me a story"}]}]}`
			resp, b := post(t, url, "/v1/messages", body, "X-Request-Id", "a1")
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			evs := anthropicEvents(t, b)
			var names []string
			var text strings.Builder
			var got []int
			for _, ev := range evs {
				names = append(names, ev.name)
				if ev.name == "content_block_delta" {
					d := ev.data["delta"].(map[string]any)
					if d["type"] != "text_delta" {
						t.Fatalf("delta type %v", d["type"])
					}
					text.WriteString(d["text"].(string))
					got = append(got, o200kCount(t, d["text"].(string)))
				}
			}
			want := []string{"message_start", "content_block_start"}
			for range tt.deltas {
				want = append(want, "content_block_delta")
			}
			want = append(want, "content_block_stop", "message_delta", "message_stop")
			if !slices.Equal(names, want) {
				t.Fatalf("events %v, want %v", names, want)
			}
			if !slices.Equal(got, tt.deltas) {
				t.Errorf("tokens per delta %v, want %v", got, tt.deltas)
			}
			msg := evs[0].data["message"].(map[string]any)
			if msg["id"] != "msg_a1" || msg["model"] != "claude-mock" || msg["role"] != "assistant" {
				t.Errorf("message_start message %v", msg)
			}
			wantInput := o200kCount(t, "Be brief.") + o200kCount(t, "Tell me a story")
			if in := msg["usage"].(map[string]any)["input_tokens"]; in != float64(wantInput) {
				t.Errorf("input_tokens %v, want %d (system and message text)", in, wantInput)
			}
			md := evs[len(evs)-2].data
			if out := md["usage"].(map[string]any)["output_tokens"]; out != float64(tt.tokens) {
				t.Errorf("message_delta output_tokens %v, want %d", out, tt.tokens)
			}
			if stop := md["delta"].(map[string]any)["stop_reason"]; stop != tt.stop {
				t.Errorf("stop_reason %v, want %s", stop, tt.stop)
			}
			if n := o200kCount(t, text.String()); n != tt.tokens {
				t.Errorf("the text is %d tokens, want %d", n, tt.tokens)
			}

			tr, ok := s.TraceByID("a1")
			if !ok {
				t.Fatal("no trace")
			}
			var kinds []string
			content := 0
			for _, e := range tr.Events {
				kinds = append(kinds, e.Kind)
				if e.Kind == KindContent {
					content += e.Tokens
				}
			}
			wantKinds := []string{KindHeaders, KindStart, KindStart}
			for range tt.deltas {
				wantKinds = append(wantKinds, KindContent)
			}
			wantKinds = append(wantKinds, KindFinish, KindUsage, KindDone)
			if !slices.Equal(kinds, wantKinds) {
				t.Errorf("trace kinds %v, want %v", kinds, wantKinds)
			}
			if content != tt.tokens || tr.CompletionTokens != tt.tokens || tr.PromptTokens != wantInput || !tr.Stream {
				t.Errorf("trace: %d content tokens, completion %d, prompt %d, stream %v", content, tr.CompletionTokens, tr.PromptTokens, tr.Stream)
			}
		})
	}
}

func TestMessagesUnary(t *testing.T) {
	s, url := newTestServer(t, Config{LogEvents: true})
	resp, b := post(t, url, "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi there"}]}`, "X-Request-Id", "u1")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var msg struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct{ Type, Text string }
		Usage                 struct {
			Input  int `json:"input_tokens"`
			Output int `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.ID != "msg_u1" || msg.Type != "message" || msg.Role != "assistant" || msg.StopReason != "max_tokens" {
		t.Errorf("message %+v", msg)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || o200kCount(t, msg.Content[0].Text) != 5 {
		t.Errorf("content %+v, want one text block of 5 tokens", msg.Content)
	}
	if msg.Usage.Input != o200kCount(t, "hi there") || msg.Usage.Output != 5 {
		t.Errorf("usage %+v", msg.Usage)
	}
	if tr, _ := s.TraceByID("u1"); tr.CompletionTokens != 5 || len(tr.Events) != 1 || tr.Events[0].Kind != KindBody {
		t.Errorf("trace %+v", tr)
	}
}

func TestMessagesErrors(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		body   string
		status int
		typ    string
	}{
		{"no messages is the client's error, in Anthropic's shape", Config{}, `{"model":"m","max_tokens":5}`, 400, "invalid_request_error"},
		{"max_tokens over the limit", Config{MaxOutputTokens: 10}, `{"max_tokens":11,"messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
		{"an injected server error", Config{ErrorRate: 1}, `{"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, 500, "api_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newTestServer(t, tt.cfg)
			resp, b := post(t, url, "/v1/messages", tt.body)
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message == "" {
				t.Errorf("status %d, body %s; want %d and an Anthropic %s", resp.StatusCode, b, tt.status, tt.typ)
			}
		})
	}
}

// TestMessagesStreamError: a stream that fails mid-way ends with an error event and no
// message_stop, as Anthropic's does when it is overloaded.
func TestMessagesStreamError(t *testing.T) {
	_, url := newTestServer(t, Config{StreamErrorRate: 1, Seed: 3})
	_, b := post(t, url, "/v1/messages", `{"max_tokens":8,"stream":true,"messages":[{"role":"user","content":"x"}]}`)
	evs := anthropicEvents(t, b)
	last := evs[len(evs)-1]
	if last.name != "error" || last.data["error"].(map[string]any)["type"] != "api_error" {
		t.Fatalf("last event %+v, want an api_error", last)
	}
}
