package decode

import (
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

// benchEvents decodes the captured stream's events in a loop, one event per iteration, resetting
// the decoder at the end of each stream as the proxy does between responses. ns/op is ns/event.
func benchEvents(b *testing.B, api, file string) {
	var events [][]byte
	size := 0
	for _, e := range splitSSE(string(readTestdata(b, file))) {
		events = append(events, []byte(e.data))
		size += len(e.data)
	}
	dec := Get(api)
	defer Put(dec)
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

// BenchmarkChatEvent is the chat decoder on the events of a real Ollama stream (128 content
// events, a finish chunk, a usage chunk and [DONE]).
func BenchmarkChatEvent(b *testing.B) { benchEvents(b, APIOpenAIChat, "chat.txt") }

// BenchmarkCompletionsEvent is the completions decoder on a real Ollama /v1/completions stream,
// whose events all carry a (zeroed) usage object.
func BenchmarkCompletionsEvent(b *testing.B) {
	benchEvents(b, APIOpenAICompletions, "completions.txt")
}

// BenchmarkFastjsonParse is the floor under BenchmarkChatEvent: fastjson parsing the same events
// and nothing else. The difference is the cost of the decoder's own work.
func BenchmarkFastjsonParse(b *testing.B) {
	var events [][]byte
	for _, e := range splitSSE(string(readTestdata(b, "chat.txt"))) {
		events = append(events, []byte(e.data))
	}
	var p fastjson.Parser
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = p.ParseBytes(events[i])
		if i++; i == len(events) {
			i = 0
		}
	}
}

// BenchmarkForPath is choosing and returning a pooled decoder, once per proxied request.
func BenchmarkForPath(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, dec := ForPath("/v1/chat/completions", "text/event-stream")
		Put(dec)
	}
}

// BenchmarkChatBody is a non-streaming chat response body.
func BenchmarkChatBody(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("word ", 100) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":100,"total_tokens":112}}`)
	dec := NewOpenAIChat()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		dec.Reset()
		dec.Body(body)
	}
}

// chatRequest4K is a 4 KiB chat request: a system prompt and a few turns.
func chatRequest4K() []byte {
	var sb strings.Builder
	sb.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","stream":true,"stream_options":{"include_usage":true},"max_tokens":256,"temperature":0.7,"messages":[`)
	sb.WriteString(`{"role":"system","content":"You are a helpful assistant. Answer briefly and cite sources."}`)
	for i := 0; sb.Len() < 4000; i++ {
		fmt.Fprintf(&sb, `,{"role":"user","content":"Question %d: %s"},{"role":"assistant","content":"Answer %d: %s"}`,
			i, strings.Repeat("tell me more about \\\"this\\\" topic ", 4), i, strings.Repeat("here is more ", 6))
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// BenchmarkParseRequest is ParseRequest on a 4 KiB chat request (a pooled parser, a fresh
// Request whose prompt and model it allocates).
func BenchmarkParseRequest(b *testing.B) {
	body := chatRequest4K()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ParseRequest(body, 1<<16)
	}
}

// BenchmarkRequestParserReuse is the same with a reused RequestParser and Request: the steady
// state of a proxy worker.
func BenchmarkRequestParserReuse(b *testing.B) {
	body := chatRequest4K()
	var rp RequestParser
	var req Request
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		rp.Parse(body, 1<<16, &req)
	}
}
