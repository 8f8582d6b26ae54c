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

// api is one row of the decoder table: the request path suffix that selects it, its name and
// how to make one, plus the pool of idle decoders.
type api struct {
	suffix string
	name   string
	new    func() ResponseDecoder
	// done reports whether a complete stream of this API ends with a sentinel event (OpenAI's
	// "[DONE]"), so a stream without it was cut short.
	done bool
	pool sync.Pool
}

// apis is the decoder table, searched in order: a longer suffix that ends with a shorter one
// ("/chat/completions" and "/completions") must come first. A new API is one more row (and a
// decoder in its own file); unknown is the fallback and is not in the table.
var apis = []*api{
	{suffix: "/chat/completions", name: APIOpenAIChat, new: NewOpenAIChat, done: true},
	{suffix: "/completions", name: APIOpenAICompletions, new: NewOpenAICompletions, done: true},
}

var unknownAPI = &api{name: APIUnknown, new: NewUnknown}

// ForPath chooses the decoder for a request path and returns the API name (for labels and
// records) and a reset decoder from the pool; give the decoder back with Put when the response
// is done. The path is matched by suffix, ignoring a query string and a trailing slash, so
// prefixes such as "/v1" or "/openai/deployments/x" do not matter. A path no row matches gets
// APIUnknown and NewUnknown's decoder, which times events without interpreting them.
//
// contentType is the response Content-Type. The OpenAI decoders do not need it; it is part of
// the signature so that APIs which share a path between formats (NDJSON and SSE) can be told
// apart without changing callers.
func ForPath(path, contentType string) (name string, dec ResponseDecoder) {
	a := lookupPath(path)
	return a.name, a.get()
}

// APIForPath returns the API name ForPath would choose, without taking a decoder.
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

// lookupPath finds the table row for a request path.
func lookupPath(path string) *api {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	for _, a := range apis {
		if strings.HasSuffix(path, a.suffix) {
			return a
		}
	}
	return unknownAPI
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

// ExpectsDone reports whether a complete stream of the named API ends with a sentinel event,
// so that a stream without one was cut short.
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
