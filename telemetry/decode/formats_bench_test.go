package decode

import (
	"strings"
	"testing"
)

// benchFormat decodes a recorded stream's events in a loop, one event per iteration, resetting
// the decoder at the end of each stream as the proxy does between responses. ns/op is
// ns/event; allocs/op must be 0 in the steady state.
func benchFormat(b *testing.B, api, file, ctype string) {
	evs := goldenEvents(b, file, ctype)
	typs, datas := make([][]byte, len(evs)), make([][]byte, len(evs))
	size := 0
	for i, e := range evs {
		typs[i], datas[i] = []byte(e.typ), []byte(e.data)
		size += len(e.data)
	}
	dec := Get(api)
	defer Put(dec)
	b.SetBytes(int64(size / len(evs)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dec.Event(typs[i], datas[i])
		if i++; i == len(evs) {
			i = 0
			dec.Reset()
		}
	}
}

func BenchmarkAnthropicEvent(b *testing.B) {
	benchFormat(b, APIAnthropicMessages, "anthropic.txt", "text/event-stream")
}

func BenchmarkResponsesEvent(b *testing.B) {
	benchFormat(b, APIOpenAIResponses, "responses.txt", "text/event-stream")
}

func BenchmarkTGIEvent(b *testing.B) {
	benchFormat(b, APITGIGenerate, "tgi.txt", "text/event-stream")
}

// BenchmarkOllamaChatEvent is the real /api/chat capture: 32 content lines and the done line.
func BenchmarkOllamaChatEvent(b *testing.B) {
	benchFormat(b, APIOllamaChat, "native-api-chat.txt", "application/x-ndjson")
}

// BenchmarkEmbeddingsBody is an OpenAI embeddings body with one 384-dimension vector, the size
// of a small embedding model's output.
func BenchmarkEmbeddingsBody(b *testing.B) {
	body := []byte(`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[` +
		strings.TrimSuffix(strings.Repeat("-0.0123456789,", 384), ",") +
		`]}],"model":"all-minilm","usage":{"prompt_tokens":8,"total_tokens":8}}`)
	dec := NewEmbeddings()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		dec.Reset()
		dec.Body(body)
	}
}

// BenchmarkParseRequestForOllama is a reused parser on the real /api/chat request.
func BenchmarkParseRequestForOllama(b *testing.B) {
	body := readTestdata(b, "native-api-chat.request.json")
	var rp RequestParser
	var req Request
	b.ReportAllocs()
	for b.Loop() {
		rp.ParseFor(APIOllamaChat, body, 1<<16, &req)
	}
}
