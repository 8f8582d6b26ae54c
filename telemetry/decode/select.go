package decode

import (
	"strings"
	"sync"
)

// maxPooledBuffer is the largest text buffer a decoder keeps when it goes back to the pool.
// Most responses are far smaller; a decoder that served a huge one gives its buffers to the
// garbage collector instead of pinning them for the pool's lifetime.
const maxPooledBuffer = 64 << 10

// pooled is what the decoders of this package implement beyond ResponseDecoder so that Put can
// return them to the right pool.
type pooled interface {
	// apiName is the API name the decoder was registered under.
	apiName() string
	// shrink drops buffers larger than limit and restores defaults (the text cap).
	shrink(limit int)
}

// framing is the stream framing an API uses, so that a stream in another framing on the same
// path (a different server behind a familiar route) is timed by the unknown decoder instead of
// being decoded event by event as Malformed.
type framing uint8

const (
	framingSSE    framing = iota // text/event-stream
	framingNDJSON                // application/x-ndjson and its aliases
	framingNone                  // the API does not stream (embeddings, rerank)
)

// api is one decoder of the table: its name and how to make one, plus the pool of idle decoders.
type api struct {
	name string
	new  func() ResponseDecoder
	// done reports whether a complete stream of this API ends with an end event (OpenAI's
	// "[DONE]", Anthropic's message_stop, the Responses API's response.completed, TGI's final
	// details, Ollama's "done":true line), so a stream without one was cut short.
	done    bool
	framing framing
	pool    sync.Pool
}

// route maps a request path suffix to an API. Several routes may share an API (TGI's
// /generate and /generate_stream), and then they share its pool.
type route struct {
	suffix string
	api    *api
}

// The decoders of the table. unknownAPI is the fallback and is not in it.
var (
	openAIChatAPI        = &api{name: APIOpenAIChat, new: NewOpenAIChat, done: true}
	openAICompletionsAPI = &api{name: APIOpenAICompletions, new: NewOpenAICompletions, done: true}
	responsesAPI         = &api{name: APIOpenAIResponses, new: NewResponses, done: true}
	anthropicAPI         = &api{name: APIAnthropicMessages, new: NewAnthropic, done: true}
	tgiAPI               = &api{name: APITGIGenerate, new: NewTGI, done: true}
	ollamaChatAPI        = &api{name: APIOllamaChat, new: NewOllamaChat, done: true, framing: framingNDJSON}
	ollamaGenerateAPI    = &api{name: APIOllamaGenerate, new: NewOllamaGenerate, done: true, framing: framingNDJSON}
	embeddingsAPI        = &api{name: APIEmbeddings, new: NewEmbeddings, framing: framingNone}
	rerankAPI            = &api{name: APIRerank, new: NewRerank, framing: framingNone}
	unknownAPI           = &api{name: APIUnknown, new: NewUnknown}
)

// apis lists every decoder of the table once, in the order APIs reports them.
var apis = []*api{
	openAIChatAPI, openAICompletionsAPI, responsesAPI, anthropicAPI, tgiAPI,
	ollamaChatAPI, ollamaGenerateAPI, embeddingsAPI, rerankAPI,
}

// routes is the path table, searched in order: a longer suffix that ends with a shorter one
// ("/chat/completions" and "/completions", "/api/generate" and "/generate") must come first. A
// new API is one more row (and a decoder in its own file).
var routes = []route{
	{"/chat/completions", openAIChatAPI},
	{"/completions", openAICompletionsAPI},
	{"/responses", responsesAPI},
	{"/v1/messages", anthropicAPI},
	{"/api/chat", ollamaChatAPI},
	{"/api/generate", ollamaGenerateAPI},
	{"/generate_stream", tgiAPI},
	{"/generate", tgiAPI},
	{"/api/embed", embeddingsAPI},      // Ollama
	{"/api/embeddings", embeddingsAPI}, // Ollama, the older route
	{"/embeddings", embeddingsAPI},     // OpenAI, vLLM, SGLang, TGI's OpenAI routes
	{"/rerank", rerankAPI},             // /v1/rerank, /v2/rerank, TEI's /rerank
}

// ForPath chooses the decoder for a request path and returns the API name (for labels and
// records) and a reset decoder from the pool; give the decoder back with Put when the response
// is done. The path is matched by suffix, ignoring a query string and a trailing slash, so
// prefixes such as "/v1" or "/openai/deployments/x" do not matter. A path no row matches gets
// APIUnknown and NewUnknown's decoder, which times events without interpreting them.
//
// contentType is the response Content-Type, when known ("" when not). A streamed response whose
// framing is not the one the path's API uses (SSE on Ollama's /api/chat, NDJSON on
// /v1/chat/completions) comes from some other server behind a familiar route: it gets the
// unknown decoder, which times its events, rather than a decoder that would call every event
// Malformed. A non-streaming Content-Type (application/json) never changes the choice, since
// every decoder reads bodies.
func ForPath(path, contentType string) (name string, dec ResponseDecoder) {
	a := lookupResponse(path, contentType)
	return a.name, a.get()
}

// APIForResponse returns the API name ForPath would choose for a response with the given
// Content-Type, without taking a decoder. A caller that picked a decoder by path before the
// response headers arrived (APIForPath) can call it once they have, and switch decoders when
// the answer differs.
func APIForResponse(path, contentType string) string {
	return lookupResponse(path, contentType).name
}

// APIForPath returns the API name ForPath would choose for a response whose Content-Type is not
// known yet, without taking a decoder.
func APIForPath(path string) string { return lookupPath(path).name }

// Get returns a reset decoder for the named API from its pool (a new one when the pool is
// empty), or an unknown-API decoder for a name not in the table.
func Get(name string) ResponseDecoder {
	if a := lookupName(name); a != nil {
		return a.get()
	}
	return unknownAPI.get()
}

// Put resets dec and returns it to the pool it came from. The caller must not use dec, or a
// Result it returned, afterwards. Decoders from other packages are ignored; nil is a no-op.
func Put(dec ResponseDecoder) {
	p, ok := dec.(pooled)
	if !ok {
		return
	}
	a := lookupName(p.apiName())
	if a == nil {
		if p.apiName() != APIUnknown {
			return
		}
		a = unknownAPI
	}
	dec.Reset()
	p.shrink(maxPooledBuffer)
	a.pool.Put(dec)
}

func (a *api) get() ResponseDecoder {
	if d, ok := a.pool.Get().(ResponseDecoder); ok {
		return d
	}
	return a.new()
}

// lookupPath finds the API for a request path.
func lookupPath(path string) *api {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	for _, r := range routes {
		if strings.HasSuffix(path, r.suffix) {
			return r.api
		}
	}
	return unknownAPI
}

// lookupResponse finds the API for a request path and the response Content-Type (see ForPath).
func lookupResponse(path, contentType string) *api {
	a := lookupPath(path)
	if f, streamed := framingOf(contentType); streamed && a != unknownAPI && f != a.framing {
		return unknownAPI
	}
	return a
}

// framingOf reports the stream framing a Content-Type announces; streamed is false for any
// other type, parameters and case notwithstanding.
func framingOf(contentType string) (f framing, streamed bool) {
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.TrimSpace(mt)
	switch {
	case strings.EqualFold(mt, "text/event-stream"):
		return framingSSE, true
	case strings.EqualFold(mt, "application/x-ndjson"), strings.EqualFold(mt, "application/ndjson"),
		strings.EqualFold(mt, "application/jsonl"), strings.EqualFold(mt, "application/json-seq"):
		return framingNDJSON, true
	}
	return framingNone, false
}

// Known reports whether name is an API this package decodes (APIUnknown included).
func Known(name string) bool {
	return name == APIUnknown || lookupName(name) != nil
}

// APIs lists the API names, for configuration errors and docs.
func APIs() []string {
	names := make([]string, 0, len(apis)+1)
	for _, a := range apis {
		names = append(names, a.name)
	}
	return append(names, APIUnknown)
}

// ExpectsDone reports whether a complete stream of the named API ends with an end event, so
// that a stream without one (no Done kind and Result.Ended false) was cut short. It is true for
// every streaming API of the table: OpenAI chat and completions ("[DONE]"), the Responses API
// (response.completed, response.incomplete), Anthropic (message_stop), TGI (the event with
// details) and Ollama (the "done":true line, in NDJSON).
func ExpectsDone(name string) bool {
	a := lookupName(name)
	return a != nil && a.done
}

func lookupName(name string) *api {
	for _, a := range apis {
		if a.name == name {
			return a
		}
	}
	return nil
}
