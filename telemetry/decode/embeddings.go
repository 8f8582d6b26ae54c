package decode

import (
	"github.com/valyala/fastjson"
)

// API names of the non-generating APIs: they return vectors or scores, never a stream.
const (
	// APIEmbeddings is OpenAI's POST /v1/embeddings (vLLM, SGLang, TEI, LiteLLM serve it too)
	// and Ollama's /api/embed and older /api/embeddings.
	APIEmbeddings = "openai.embeddings"
	// APIRerank is POST /rerank, /v1/rerank and /v2/rerank (Cohere's shape, served by vLLM,
	// Jina, LiteLLM and TEI).
	APIRerank = "rerank"
)

// NewEmbeddings returns a decoder for embedding responses. They generate no text, so Body
// returns Other for a good response (and Error for an error object): an embedding request is
// timed as a whole, and has no TTFT.
//
// Usage: InputTokens is usage.prompt_tokens (OpenAI), else usage.total_tokens, else Ollama's
// prompt_eval_count; OutputTokens is 0 whenever an input count is known, since nothing is
// generated. Ollama's /api/embed also reports total_duration and load_duration, which go to
// ServerTimings. A body that is a JSON array (TEI's native /embed) carries no usage and is
// Other. Event, which these APIs never need, reads its data with the same rules.
func NewEmbeddings() ResponseDecoder { return newScoring(APIEmbeddings) }

// NewRerank returns a decoder for rerank responses, with the rules of NewEmbeddings: usage
// ({"total_tokens":…}, sometimes prompt_tokens too) gives InputTokens, and "results" is not
// read.
func NewRerank() ResponseDecoder { return newScoring(APIRerank) }

func newScoring(api string) *scoring {
	d := &scoring{}
	d.init(api)
	return d
}

// scoring decodes the embeddings and rerank responses.
type scoring struct {
	base
}

// Event implements ResponseDecoder.
func (d *scoring) Event(typ, data []byte) Kind {
	if string(typ) == "error" {
		d.sseError(trimSpace(data))
		return Error
	}
	return d.Body(data)
}

// Body implements ResponseDecoder.
func (d *scoring) Body(body []byte) Kind {
	body = trimSpace(body)
	if len(body) == 0 {
		return Other
	}
	v, err := d.p.ParseBytes(body)
	if err != nil {
		d.res.Malformed++
		return Malformed
	}
	switch v.Type() {
	case fastjson.TypeArray:
		return Other
	case fastjson.TypeObject:
	default:
		d.res.Malformed++
		return Malformed
	}
	if e := v.Get("error"); (e != nil && e.Type() != fastjson.TypeNull) || string(v.GetStringBytes("object")) == "error" {
		if !d.errorObject(v) {
			d.res.ErrorType, d.res.ErrorMessage = "", "error"
		}
		return Error
	}
	d.setModel(v.GetStringBytes("model"))
	in := int64(-1)
	if u := last(v, "usage"); u != nil && u.Type() == fastjson.TypeObject {
		in = countOr(count(last(u, "prompt_tokens")), count(last(u, "total_tokens")))
	}
	pc := count(v.Get("prompt_eval_count"))
	in = countOr(in, pc)
	if in >= 0 {
		d.res.Usage.InputTokens, d.res.Usage.OutputTokens, d.res.HasUsage = in, 0, true
	}
	load, total := nanos(v.Get("load_duration")), nanos(v.Get("total_duration"))
	if pc >= 0 || load > 0 || total > 0 {
		d.res.ServerTimings = ServerTimings{Format: FormatOllama, PromptEvalCount: max(pc, 0), LoadDuration: load, TotalDuration: total}
	}
	return Other
}

// Reset implements ResponseDecoder.
func (d *scoring) Reset() { d.reset() }

// Interface guards.
var (
	_ ResponseDecoder = (*scoring)(nil)
	_ TextLimiter     = (*scoring)(nil)
	_ pooled          = (*scoring)(nil)
)
