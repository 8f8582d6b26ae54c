package mock

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	json "github.com/goccy/go-json"
	"github.com/tiktoken-go/tokenizer"
)

// endpoint is the API a request was sent to.
type endpoint uint8

const (
	chatEndpoint           endpoint = iota // POST /v1/chat/completions
	completionEndpoint                     // POST /v1/completions
	messagesEndpoint                       // POST /v1/messages (Anthropic's Messages API)
	ollamaChatEndpoint                     // POST /api/chat (Ollama's native chat)
	ollamaGenerateEndpoint                 // POST /api/generate (Ollama's native generate)
	tgiStreamEndpoint                      // POST /generate_stream (TGI's native stream)
	tgiEndpoint                            // POST /generate (TGI's native body)
)

// native reports whether ep is one of the native (Ollama, TGI) APIs, which
// have one choice and no reasoning.
func (ep endpoint) native() bool { return ep >= ollamaChatEndpoint }

// request is the part of an OpenAI chat or completions body, or of an
// Anthropic Messages body, the mock honours. Everything else (temperature, stop, tools…) is accepted and
// ignored, as a mock cannot act on it.
type request struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	System              json.RawMessage `json:"system"` // Anthropic: a string or text blocks
	Prompt              json.RawMessage `json:"prompt"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	N                   *int            `json:"n"`

	// The native APIs' fields: Ollama's options.num_predict, TGI's inputs
	// and parameters (see native.go).
	Options    *ollamaOptions  `json:"options"`
	Inputs     json.RawMessage `json:"inputs"`
	Parameters *tgiParameters  `json:"parameters"`
	details    bool            // TGI: the final event carries details
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentPart is one element of an array-valued message content; only text
// parts carry prompt text.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// limits are the output bounds a request asked for, resolved against the
// server's configuration.
type limits struct {
	max       int  // tokens at most, >= 1
	explicit  bool // max came from the request, so reaching it is "length"
	min       int  // tokens at least, <= max
	ignoreEOS bool
	n         int // choices
}

// errBadRequest marks errors that are the client's fault (HTTP 400).
var errBadRequest = errors.New("invalid request")

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}

// parseRequest decodes a request body for ep and checks the fields the mock
// acts on. Errors wrap errBadRequest.
func parseRequest(body []byte, ep endpoint) (*request, error) {
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("decoding JSON body: %v", err)
	}
	if ep.native() {
		return nativeRequest(&req, body, ep)
	}
	switch ep {
	case chatEndpoint, messagesEndpoint:
		if len(req.Messages) == 0 {
			return nil, badRequest("messages: at least one message is required")
		}
	case completionEndpoint:
		if len(bytes.TrimSpace(req.Prompt)) == 0 {
			return nil, badRequest("prompt: required")
		}
	}
	return &req, nil
}

// limits resolves the request's token bounds. max_completion_tokens wins
// over max_tokens, as in OpenAI's API and vLLM.
func (req *request) limits(cfg *Config) (limits, error) {
	l := limits{max: cfg.OutputTokens, ignoreEOS: req.IgnoreEOS, n: 1}
	mt := req.MaxCompletionTokens
	name := "max_completion_tokens"
	if mt == nil {
		mt, name = req.MaxTokens, "max_tokens"
	}
	if mt != nil {
		if *mt < 1 || *mt > cfg.MaxOutputTokens {
			return l, badRequest("%s %d: must be in [1, %d]", name, *mt, cfg.MaxOutputTokens)
		}
		l.max, l.explicit = *mt, true
	}
	if req.MinTokens != nil {
		if *req.MinTokens < 0 || *req.MinTokens > cfg.MaxOutputTokens {
			return l, badRequest("min_tokens %d: must be in [0, %d]", *req.MinTokens, cfg.MaxOutputTokens)
		}
		l.min = min(*req.MinTokens, l.max)
	}
	if req.N != nil {
		if *req.N < 1 || *req.N > MaxChoices {
			return l, badRequest("n %d: must be in [1, %d]", *req.N, MaxChoices)
		}
		l.n = *req.N
	}
	return l, nil
}

// includeUsage reports whether a stream for req ends with a usage chunk.
func (req *request) includeUsage(mode UsageMode) bool {
	switch mode {
	case UsageAlways:
		return true
	case UsageNever:
		return false
	default:
		return req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	}
}

// promptTokens counts the prompt with counter. Chat prompts are the texts
// of all messages (string contents and the text parts of array contents),
// counted without a chat template, and for Anthropic's Messages API the
// system prompt too; completions prompts are a string, an
// array of one string, or an array of token ids (counted as they are).
func (req *request) promptTokens(ep endpoint, counter PromptCounter) (int, error) {
	count := func(s string) int {
		if counter == PromptApprox {
			return (len(s) + 3) / 4
		}
		n, _ := o200k().Count(s) // Count fails only in strict UTF-8 mode.
		return n
	}
	if ep == completionEndpoint || ep == ollamaGenerateEndpoint || ep == tgiEndpoint || ep == tgiStreamEndpoint {
		return countPrompt(req.Prompt, count)
	}
	total := 0
	if ep == messagesEndpoint && len(bytes.TrimSpace(req.System)) > 0 {
		n, err := contentTokens(req.System, count)
		if err != nil {
			return 0, badRequest("system: %v", err)
		}
		total += n
	}
	for i, m := range req.Messages {
		n, err := contentTokens(m.Content, count)
		if err != nil {
			return 0, badRequest("messages[%d].content: %v", i, err)
		}
		total += n
	}
	return total, nil
}

// contentTokens counts a message content: a string, or an array of parts
// (OpenAI) or blocks (Anthropic) of which the text ones count. Absent and
// null contents (assistant tool calls) count nothing.
func contentTokens(raw json.RawMessage, count func(string) int) (int, error) {
	c := bytes.TrimSpace(raw)
	if len(c) == 0 || c[0] == 'n' {
		return 0, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return 0, err
		}
		return count(s), nil
	}
	var parts []contentPart
	if err := json.Unmarshal(c, &parts); err != nil {
		return 0, fmt.Errorf("must be a string or an array of parts: %v", err)
	}
	total := 0
	for _, p := range parts {
		if p.Type == "text" {
			total += count(p.Text)
		}
	}
	return total, nil
}

// countPrompt counts a completions prompt. A batch of several prompts is
// refused: it would need one set of choices per prompt, which the mock
// does not model.
func countPrompt(raw json.RawMessage, count func(string) int) (int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, badRequest("prompt: %v", err)
		}
		return count(s), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return 0, badRequest("prompt: must be a string, an array of one string or an array of token ids")
	}
	if len(items) == 0 {
		return 0, badRequest("prompt: empty array")
	}
	if first := bytes.TrimSpace(items[0]); len(first) > 0 && first[0] == '"' {
		if len(items) > 1 {
			return 0, badRequest("prompt: batches of %d prompts are not supported", len(items))
		}
		return countPrompt(first, count)
	}
	for i, it := range items {
		var id uint64
		if err := json.Unmarshal(it, &id); err != nil {
			return 0, badRequest("prompt[%d]: token ids must be non-negative integers (batches are not supported)", i)
		}
	}
	return len(items), nil
}

// o200k loads the o200k_base vocabulary on first use (about 40 ms), so a
// server configured with PromptApprox never pays for it. The codec is safe
// for concurrent use.
var o200k = sync.OnceValue(func() tokenizer.Codec {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		panic("mockllm: o200k_base tokenizer unavailable: " + err.Error()) // built in; cannot happen
	}
	o200kLoaded.Store(true)
	return c
})

// o200kLoaded reports whether the vocabulary was loaded, for tests.
var o200kLoaded atomic.Bool
