package mock

import (
	"math/rand/v2"
	"strconv"
	"unicode/utf8"
)

// The encoders below append JSON by hand: a stream writes one small chunk
// per token, and building them from a per-request prefix keeps the server
// allocation-free per event. Field order and shape follow vLLM's
// OpenAI-compatible server.

// appendJSONString appends s as a JSON string literal. Invalid UTF-8 bytes
// become U+FFFD one by one, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if b >= 0x20 && b != '"' && b != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, `\n`...)
		case '\r':
			dst = append(dst, `\r`...)
		case '\t':
			dst = append(dst, `\t`...)
		default:
			dst = append(dst, `\u00`...)
			dst = append(dst, hex[b>>4], hex[b&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendWords appends n random words (each one o200k token with its
// leading space). Words need no escaping.
func appendWords(dst []byte, n int, rng *rand.Rand) []byte {
	for n > 0 {
		// One 64-bit draw gives eight word indices.
		bits := rng.Uint64()
		for k := 0; k < 8 && n > 0; k++ {
			dst = append(dst, words[bits&uint64(wordMask)]...)
			bits >>= 8
			n--
		}
	}
	return dst
}

// appendHead appends the fields every chunk or body of a response starts
// with, up to and including `"choices":[`.
func appendHead(dst []byte, ep endpoint, stream bool, id string, created int64, model string) []byte {
	dst = append(dst, `{"id":`...)
	if ep == chatEndpoint {
		dst = appendJSONString(dst, "chatcmpl-"+id)
		if stream {
			dst = append(dst, `,"object":"chat.completion.chunk"`...)
		} else {
			dst = append(dst, `,"object":"chat.completion"`...)
		}
	} else {
		dst = appendJSONString(dst, "cmpl-"+id)
		dst = append(dst, `,"object":"text_completion"`...)
	}
	dst = append(dst, `,"created":`...)
	dst = strconv.AppendInt(dst, created, 10)
	dst = append(dst, `,"model":`...)
	dst = appendJSONString(dst, model)
	return append(dst, `,"choices":[`...)
}

// appendIndex appends `{"index":i,`.
func appendIndex(dst []byte, i int) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	return append(dst, ',')
}

// appendFinish appends a finish_reason value, null when reason is empty.
func appendFinish(dst []byte, reason string) []byte {
	dst = append(dst, `"logprobs":null,"finish_reason":`...)
	if reason == "" {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = append(dst, reason...)
	return append(dst, '"')
}

// appendUsage appends `"usage":{...}`. completion_tokens_details appears
// only when there are reasoning tokens, prompt_tokens_details only when there
// are cached ones.
func appendUsage(dst []byte, prompt, completion, reasoning, cached int) []byte {
	dst = append(dst, `"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt+completion), 10)
	if reasoning > 0 {
		dst = append(dst, `,"completion_tokens_details":{"reasoning_tokens":`...)
		dst = strconv.AppendInt(dst, int64(reasoning), 10)
		dst = append(dst, '}')
	}
	if cached = min(cached, prompt); cached > 0 {
		dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
		dst = strconv.AppendInt(dst, int64(cached), 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// appendErrorObject appends an OpenAI error object,
// {"error":{"message":…,"type":…,"param":null,"code":…}}.
func appendErrorObject(dst []byte, message, typ string, code int) []byte {
	dst = append(dst, `{"error":{"message":`...)
	dst = appendJSONString(dst, message)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, typ)
	dst = append(dst, `,"param":null,"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	return append(dst, "}}"...)
}

// SSE framing.
const (
	sseData = "data: "
	sseEnd  = "\n\n"
	sseDone = "data: [DONE]\n\n"
)

// appendAnthropicInput appends the input side of an Anthropic usage object:
// input_tokens counts only the prompt tokens neither read from nor written to
// the cache, which the two cache counts report (when not zero).
func appendAnthropicInput(dst []byte, prompt, cached, written int) []byte {
	cached = min(cached, prompt)
	written = min(written, prompt-cached)
	dst = append(dst, `"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt-cached-written), 10)
	if cached > 0 {
		dst = append(dst, `,"cache_read_input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(cached), 10)
	}
	if written > 0 {
		dst = append(dst, `,"cache_creation_input_tokens":`...)
		dst = strconv.AppendInt(dst, int64(written), 10)
	}
	return dst
}
