package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Endpoint types, named as AIPerf's --endpoint-type where AIPerf has the API.
const (
	EndpointChat        = "chat"        // OpenAI chat completions
	EndpointCompletions = "completions" // OpenAI legacy completions
	EndpointMessages    = "messages"    // Anthropic messages
	EndpointOllamaChat  = "ollama_chat" // Ollama's native chat API (NDJSON stream)
)

// EndpointTypes lists the endpoint types a body can be built for.
var EndpointTypes = []string{EndpointChat, EndpointCompletions, EndpointMessages, EndpointOllamaChat}

// DefaultPath returns the URL path an endpoint type is served on, "" for an unknown type.
func DefaultPath(endpointType string) string {
	switch endpointType {
	case EndpointChat:
		return "/v1/chat/completions"
	case EndpointCompletions:
		return "/v1/completions"
	case EndpointMessages:
		return "/v1/messages"
	case EndpointOllamaChat:
		return "/api/chat"
	}
	return ""
}

// Path returns the URL path requests go to: endpoint when given (with a leading slash), else
// the endpoint type's DefaultPath.
func Path(endpoint, endpointType string) string {
	if endpoint == "" {
		endpoint = DefaultPath(endpointType)
	}
	if !strings.HasPrefix(endpoint, "/") {
		endpoint = "/" + endpoint
	}
	return endpoint
}

// ArtifactName returns the endpoint's part of an artifact folder name, as AIPerf writes it
// ("openai-chat").
func ArtifactName(endpointType string) string {
	switch endpointType {
	case EndpointChat, EndpointCompletions:
		return "openai-" + endpointType
	case EndpointMessages:
		return "anthropic-messages"
	case EndpointOllamaChat:
		return "ollama-chat"
	}
	return endpointType
}

// messagesDefaultMaxTokens is the max_tokens sent to the Anthropic API when no output length
// is set, because that API requires the field.
const messagesDefaultMaxTokens = 4096

// Extra is one --extra-inputs member merged into every request body. Value is JSON.
type Extra struct {
	Key   string
	Value json.RawMessage
}

// ParseExtras reads every argument with ParseExtra and returns their Extras in order, with
// every argument's error at once.
func ParseExtras(args []string) ([]Extra, error) {
	var extras []Extra
	var errs []error
	for _, a := range args {
		ex, err := ParseExtra(a)
		if err != nil {
			errs = append(errs, err)
		}
		extras = append(extras, ex...)
	}
	return extras, errors.Join(errs...)
}

// ParseExtra reads one --extra-inputs argument: "key:value", where a value that is valid JSON
// (a number, true/false, null, an object, an array, a quoted string) is sent as that JSON and
// anything else as a string, so "min_tokens:128" sends a number, "ignore_eos:true" a boolean
// and "stop:END" the string "END". An argument that is a JSON object gives one Extra per
// member, in order.
func ParseExtra(arg string) ([]Extra, error) {
	s := strings.TrimSpace(arg)
	if strings.HasPrefix(s, "{") {
		return parseExtraObject(s)
	}
	key, val, ok := strings.Cut(s, ":")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return nil, fmt.Errorf("extra input %q: want key:value or a JSON object", arg)
	}
	raw := []byte(strings.TrimSpace(val))
	if !json.Valid(raw) {
		raw, _ = json.Marshal(val)
	}
	return []Extra{{Key: key, Value: raw}}, nil
}

func parseExtraObject(s string) ([]Extra, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("extra inputs %q: %v", s, err)
	}
	var out []Extra
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("extra inputs %q: %v", s, err)
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("extra inputs %q: member %q: %v", s, key, err)
		}
		out = append(out, Extra{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("extra inputs %q: %v", s, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("extra inputs %q: text after the JSON object", s)
	}
	return out, nil
}

// BodySpec says how request bodies are written.
type BodySpec struct {
	// Endpoint is one of EndpointTypes.
	Endpoint string
	// Model is the body's "model".
	Model string
	// Stream asks for a streamed response; OpenAI bodies then also ask for a usage chunk
	// (stream_options.include_usage), as AIPerf does.
	Stream bool
	// LegacyMaxTokens sends a chat request's output length as max_tokens instead of
	// max_completion_tokens (AIPerf's --use-legacy-max-tokens).
	LegacyMaxTokens bool
	// Extra members are merged in last, replacing a member of the same name.
	Extra []Extra
}

// Validate reports an unknown endpoint type.
func (s BodySpec) Validate() error {
	if DefaultPath(s.Endpoint) == "" {
		return fmt.Errorf("endpoint type %q: want one of %s", s.Endpoint, strings.Join(EndpointTypes, ", "))
	}
	return nil
}

// member is one top-level member of a body being written.
type member struct {
	key string
	val any // json.RawMessage is written as is
}

// Build returns the body of one request with the given prompt and output length (0 = no
// output limit is sent, except to the Anthropic API, which requires one).
func (s BodySpec) Build(prompt string, maxTokens int) ([]byte, error) {
	return s.BuildMessages([]Message{{Role: RoleUser, Content: prompt}}, maxTokens, nil)
}

// BuildMessages returns the body of one request whose input is msgs, in order (a conversation
// with its history), with the output length as Build has it and extra merged in after
// s.Extra (a dataset row's own extra members, which win). The completions API, which takes
// one prompt, gets the messages' contents joined by newlines; the Anthropic API gets system
// messages in its top-level "system" member.
func (s BodySpec) BuildMessages(msgs []Message, maxTokens int, extra []Extra) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	ms := []member{{"model", s.Model}}
	switch s.Endpoint {
	case EndpointChat, EndpointCompletions:
		if s.Endpoint == EndpointChat {
			ms = append(ms, member{"messages", msgs})
		} else {
			ms = append(ms, member{"prompt", joinContents(msgs)})
		}
		ms = append(ms, member{"stream", s.Stream})
		if s.Stream {
			ms = append(ms, member{"stream_options", map[string]bool{"include_usage": true}})
		}
		if maxTokens > 0 {
			key := "max_tokens"
			if s.Endpoint == EndpointChat && !s.LegacyMaxTokens {
				key = "max_completion_tokens"
			}
			ms = append(ms, member{key, maxTokens})
		}
	case EndpointMessages:
		if maxTokens <= 0 {
			maxTokens = messagesDefaultMaxTokens
		}
		system, rest := splitSystem(msgs)
		if system != "" {
			ms = append(ms, member{"system", system})
		}
		ms = append(ms, member{"messages", rest}, member{"max_tokens", maxTokens}, member{"stream", s.Stream})
	case EndpointOllamaChat:
		ms = append(ms, member{"messages", flatParts(msgs)}, member{"stream", s.Stream})
		if maxTokens > 0 {
			ms = append(ms, member{"options", map[string]int{"num_predict": maxTokens}})
		}
	}
	for _, e := range slices.Concat(s.Extra, extra) {
		replaced := false
		for i := range ms {
			if ms[i].key == e.Key {
				ms[i].val, replaced = e.Value, true
			}
		}
		if !replaced {
			ms = append(ms, member{e.Key, e.Value})
		}
	}
	return writeObject(ms)
}

// writeObject writes members in order, so bodies are stable and read like hand-written ones.
func writeObject(ms []member) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		if err := enc.Encode(m.val); err != nil {
			return nil, fmt.Errorf("writing body member %q: %w", m.key, err)
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
