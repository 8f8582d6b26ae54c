package bench

import "testing"

// TestReplyText reads the generated text of the response shapes a conversation may get back.
func TestReplyText(t *testing.T) {
	for _, tc := range []struct {
		name, path, ct, body, want string
	}{
		{"chat stream", "/v1/chat/completions", "text/event-stream; charset=utf-8",
			"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
				"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n" +
				"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"}}]}\n\n" +
				"data: [DONE]\n\n", "Hello there"},
		{"chat body", "/v1/chat/completions", "application/json",
			`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Unary reply"}}]}`, "Unary reply"},
		{"messages stream", "/v1/messages", "text/event-stream",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n", "Hi"},
		{"ollama stream", "/api/chat", "application/x-ndjson",
			"{\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\n{\"message\":{\"role\":\"assistant\",\"content\":\"b\"},\"done\":true}\n", "ab"},
		{"garbage", "/v1/chat/completions", "text/plain", "not json", ""},
	} {
		if got := ReplyText(tc.path, tc.ct, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
