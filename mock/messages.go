package mock

import (
	"net/http"
	"strconv"
	"time"
)

// Anthropic's Messages API (POST /v1/messages), on the same schedule and
// with the same ground truth as the OpenAI routes. A stream is
//
//	event: message_start        the message, usage.input_tokens, output_tokens 1
//	event: content_block_start  one text block, index 0
//	event: content_block_delta  a text_delta per chunk (Config.TokensPerChunk tokens)
//	event: content_block_stop
//	event: message_delta        stop_reason, cumulative usage.output_tokens
//	event: message_stop
//
// as in Anthropic's streaming documentation. message_start and
// content_block_start are written at arrival (trace kind "start"), each
// delta at its last token's generation time ("content"), content_block_stop
// ("finish"), message_delta ("usage") and message_stop ("done") with the
// last delta. A non-streaming request gets one message body. The API has no
// n and no reasoning here: one text block, Config.Reasoning ignored. Usage
// is always reported, as Anthropic does, whatever Config.Usage says.
// Errors use Anthropic's shape: {"type":"error","error":{"type":…,"message":…}}.

// Anthropic stop reasons for the finish reasons of a plan.
func stopReason(finish string) string {
	if finish == finishLength {
		return "max_tokens"
	}
	return "end_turn"
}

// messagesStream answers a streaming Messages request.
func (r *responder) messagesStream(id, model string, prompt int) {
	h := r.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	r.headers()
	r.flush()

	b := append(r.buf[:0], "event: message_start\ndata: "...)
	b = append(b, `{"type":"message_start","message":`...)
	b = appendMessageHead(b, id, model)
	b = append(b, `"content":[],"stop_reason":null,"stop_sequence":null,"usage":{`...)
	b = appendAnthropicInput(b, prompt, r.s.cfg.CachedTokens, r.s.cfg.CacheWriteTokens)
	b = append(b, `,"output_tokens":1}}}`+sseEnd...)
	r.write(b, KindStart, 0, 0, r.started)
	b = append(r.buf[:0], "event: content_block_start\ndata: "...)
	b = append(b, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`+sseEnd...)
	r.write(b, KindStart, 0, 0, r.started)
	r.flush()

	cp := &r.plan.choices[0]
	var at time.Time
	for i := range cp.tokens {
		if i == r.plan.streamErrAt {
			r.messagesStreamError(r.started.Add(r.sched.advance()))
			return
		}
		var n int
		var ok bool
		if at, n, ok = r.step(i, cp); !ok {
			return
		}
		if n == 0 {
			continue
		}
		b = append(r.buf[:0], "event: content_block_delta\ndata: "...)
		b = append(b, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`...)
		b = appendWords(b, n, r.rng)
		if r.write(append(b, `"}}`+sseEnd...), KindContent, n, 0, at) {
			r.tokens += int64(n)
		}
		if r.gone {
			return
		}
		if i < cp.tokens-1 {
			r.flush()
		}
	}
	b = append(r.buf[:0], "event: content_block_stop\ndata: "...)
	b = append(b, `{"type":"content_block_stop","index":0}`+sseEnd...)
	r.write(b, KindFinish, 0, 0, at)
	b = append(r.buf[:0], "event: message_delta\ndata: "...)
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":"`...)
	b = append(b, stopReason(cp.finish)...)
	b = append(b, `","stop_sequence":null},"usage":{"output_tokens":`...)
	b = strconv.AppendInt(b, int64(cp.tokens), 10)
	r.write(append(b, `}}`+sseEnd...), KindUsage, 0, 0, at)
	if r.gone {
		return
	}
	r.finished = true
	r.mark(KindDone, 0, 0, at)
	r.commit()
	r.writeRaw([]byte("event: message_stop\ndata: {\"type\":\"message_stop\"}" + sseEnd))
	r.flush()
}

// messagesStreamError ends a Messages stream with an error event, as
// Anthropic does when it is overloaded mid-stream.
func (r *responder) messagesStreamError(at time.Time) {
	if !r.wait(at) {
		return
	}
	r.s.streamErrs.Add(1)
	b := append(r.buf[:0], "event: error\ndata: "...)
	b = appendAnthropicError(b, "api_error", "mockllm: injected stream error")
	r.write(append(b, sseEnd...), KindError, 0, 0, at)
	r.commit()
	r.flush()
}

// messagesUnary answers a non-streaming Messages request once the last
// token is due.
func (r *responder) messagesUnary(id, model string, prompt int) {
	at := r.waitLast()
	if at.IsZero() {
		return
	}
	r.finished = true
	cp := r.plan.choices[0]
	b := appendMessageHead(r.buf[:0], id, model)
	b = append(b, `"content":[{"type":"text","text":"`...)
	b = appendWords(b, cp.tokens, r.rng)
	b = append(b, `"}],"stop_reason":"`...)
	b = append(b, stopReason(cp.finish)...)
	b = append(b, `","stop_sequence":null,"usage":{`...)
	b = appendAnthropicInput(b, prompt, r.s.cfg.CachedTokens, r.s.cfg.CacheWriteTokens)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(cp.tokens), 10)
	b = append(b, "}}"...)
	r.buf = b

	h := r.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	r.tokens = int64(cp.tokens)
	if r.tracing {
		r.trace.Status = http.StatusOK
		r.mark(KindBody, cp.tokens, 0, at)
		r.commit()
	}
	r.w.WriteHeader(http.StatusOK)
	if _, err := r.w.Write(b); err != nil {
		r.gone = true
	}
}

// appendMessageHead appends `{"id":…,"type":"message","role":"assistant","model":…,`.
func appendMessageHead(dst []byte, id, model string) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, "msg_"+id)
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = appendJSONString(dst, model)
	return append(dst, ',')
}

// appendAnthropicError appends {"type":"error","error":{"type":…,"message":…}}.
func appendAnthropicError(dst []byte, typ, message string) []byte {
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = appendJSONString(dst, typ)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, message)
	return append(dst, "}}"...)
}

// anthropicErrorType names an HTTP error status as Anthropic's API does.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "invalid_request_error"
	case http.StatusNotFound:
		return "not_found_error"
	default:
		return "api_error"
	}
}
