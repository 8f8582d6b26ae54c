package mock

import (
	"bytes"
	"net/http"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
)

// The native APIs of Ollama and TGI, on the same schedule as the OpenAI routes, one choice, no
// reasoning, no injected stream errors (Config.StreamErrorRate applies to the OpenAI and
// Anthropic streams only).
//
// Ollama (POST /api/chat, /api/generate): NDJSON lines, Content-Type application/x-ndjson,
// unless the request says "stream":false; options.num_predict is max_tokens. A content line is
//
//	{"model":"m","created_at":"…","message":{"role":"assistant","content":" the"},"done":false}
//
// ("response":" the" for /api/generate) and the last line is
//
//	{"model":"m","created_at":"…","message":{"role":"assistant","content":""},"done":true,
//	 "done_reason":"stop","total_duration":…,"load_duration":0,"prompt_eval_count":3,
//	 "prompt_eval_duration":…,"eval_count":2,"eval_duration":…}
//
// with the durations in nanoseconds as Ollama reports them: prompt_eval_duration the prefill,
// eval_duration the decode, total_duration queue + prefill + decode (the mock loads no model,
// so load_duration is 0). The headers go out with the first line, as Ollama's do.
//
// TGI (POST /generate_stream, /generate): a request {"inputs":"…","parameters":
// {"max_new_tokens":n,"details":true}} gets one SSE event per token,
// data:{"index":i,"token":{"id":i,"text":" the","logprob":-0.1,"special":false},
// "generated_text":null,"details":null}, the last with generated_text and, when asked, details
// (finish_reason "length" or "eos_token", generated_tokens, seed, input_length); /generate
// answers {"generated_text":…} (and details) with TGI's timing headers, whole milliseconds:
// x-queue-time, x-inference-time (prefill + decode), x-total-time, x-validation-time,
// x-time-per-token, x-prompt-tokens, x-generated-tokens.

type ollamaOptions struct {
	NumPredict *int `json:"num_predict"`
}

type tgiParameters struct {
	MaxNewTokens *int `json:"max_new_tokens"`
	Details      bool `json:"details"`
}

// nativeRequest checks and normalises a native request decoded into req: the prompt, the
// stream flag (Ollama streams unless told not to; TGI by route) and the token limit.
func nativeRequest(req *request, body []byte, ep endpoint) (*request, error) {
	req.N, req.MaxCompletionTokens, req.MinTokens, req.StreamOptions = nil, nil, nil, nil
	switch ep {
	case ollamaChatEndpoint, ollamaGenerateEndpoint:
		if ep == ollamaChatEndpoint && len(req.Messages) == 0 {
			return nil, badRequest("messages: at least one message is required")
		}
		if ep == ollamaGenerateEndpoint && len(bytes.TrimSpace(req.Prompt)) == 0 {
			return nil, badRequest("prompt: required")
		}
		var s struct {
			Stream *bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &s) // it decoded once already
		req.Stream = s.Stream == nil || *s.Stream
		req.MaxTokens = nil
		if o := req.Options; o != nil && o.NumPredict != nil && *o.NumPredict > 0 {
			req.MaxTokens = o.NumPredict // -1 and 0 mean "until the model stops"
		}
	default: // TGI
		if len(bytes.TrimSpace(req.Inputs)) == 0 {
			return nil, badRequest("inputs: required")
		}
		req.Prompt, req.Stream, req.MaxTokens = req.Inputs, ep == tgiStreamEndpoint, nil
		if p := req.Parameters; p != nil {
			req.MaxTokens, req.details = p.MaxNewTokens, p.Details
		}
	}
	return req, nil
}

// ollamaDone is Ollama's done_reason for a plan's finish reason.
func ollamaDone(finish string) string {
	if finish == finishLength {
		return "length"
	}
	return "stop"
}

// ollama answers /api/chat and /api/generate.
func (r *responder) ollama(ep endpoint, model string, prompt int, stream bool) {
	cp := &r.plan.choices[0]
	head := append(r.head[:0], `{"model":`...)
	head = appendJSONString(head, model)
	head = append(head, `,"created_at":"`...)
	head = r.started.UTC().AppendFormat(head, time.RFC3339Nano)
	head = append(head, `",`...)
	r.head = head
	open, closeText := `"message":{"role":"assistant","content":"`, `"},`
	if ep == ollamaGenerateEndpoint {
		open, closeText = `"response":"`, `",`
	}
	h := r.w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	if !stream {
		at := r.waitLast()
		if at.IsZero() {
			return
		}
		b := append(append(r.buf[:0], r.head...), open...)
		b = appendWords(b, cp.tokens, r.rng)
		b = append(b, closeText...)
		b = r.appendOllamaDone(b, cp, prompt)
		h.Set("Content-Type", "application/json; charset=utf-8")
		r.tokens = int64(cp.tokens)
		r.finished = true
		r.body1(b, KindBody, cp.tokens, at)
		return
	}
	var at time.Time
	for i := range cp.tokens {
		var n int
		var ok bool
		if at, n, ok = r.step(i, cp); !ok {
			return
		}
		if n == 0 {
			continue
		}
		if r.events == 0 {
			r.headers()
		}
		b := append(append(r.buf[:0], r.head...), open...)
		b = appendWords(b, n, r.rng)
		b = append(b, closeText...)
		if r.write(append(b, `"done":false}`+"\n"...), KindContent, n, 0, at) {
			r.tokens += int64(n)
		}
		if r.gone {
			return
		}
		if i < cp.tokens-1 {
			r.flush()
		}
	}
	b := append(append(r.buf[:0], r.head...), open...)
	b = append(b, closeText...)
	b = r.appendOllamaDone(b, cp, prompt)
	r.finished = true
	r.mark(KindDone, 0, 0, at)
	r.commit()
	r.writeRaw(append(b, '\n'))
	r.buf = b[:0]
	r.flush()
}

// appendOllamaDone appends the fields of Ollama's final object, from "done":true on.
func (r *responder) appendOllamaDone(b []byte, cp *choicePlan, prompt int) []byte {
	sp := r.split()
	b = append(b, `"done":true,"done_reason":"`...)
	b = append(b, ollamaDone(cp.finish)...)
	b = append(b, `","total_duration":`...)
	b = strconv.AppendInt(b, int64(sp.queue+sp.prefill+sp.decode), 10)
	b = append(b, `,"load_duration":0,"prompt_eval_count":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"prompt_eval_duration":`...)
	b = strconv.AppendInt(b, int64(sp.prefill), 10)
	b = append(b, `,"eval_count":`...)
	b = strconv.AppendInt(b, int64(cp.tokens), 10)
	b = append(b, `,"eval_duration":`...)
	b = strconv.AppendInt(b, int64(sp.decode), 10)
	return append(b, '}')
}

// headers sends the status line and the headers set so far.
func (r *responder) headers() {
	if r.tracing {
		r.trace.Status = http.StatusOK
	}
	r.mark(KindHeaders, 0, 0, r.started)
	r.w.WriteHeader(http.StatusOK)
}

// body1 writes a whole non-streaming body b with its length, recording it as one event.
func (r *responder) body1(b []byte, kind string, tokens int, at time.Time) {
	r.buf = b
	r.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	if r.tracing {
		r.trace.Status = http.StatusOK
		r.trace.CompletionTokens = tokens
		r.mark(kind, tokens, 0, at)
		r.commit()
	}
	r.w.WriteHeader(http.StatusOK)
	if _, err := r.w.Write(b); err != nil {
		r.gone = true
	}
}

// tgiFinish is TGI's finish_reason for a plan's.
func tgiFinish(finish string) string {
	if finish == finishLength {
		return "length"
	}
	return "eos_token"
}

// appendTGIDetails appends TGI's details object.
func appendTGIDetails(b []byte, cp *choicePlan, prompt int) []byte {
	b = append(b, `{"finish_reason":"`...)
	b = append(b, tgiFinish(cp.finish)...)
	b = append(b, `","generated_tokens":`...)
	b = strconv.AppendInt(b, int64(cp.tokens), 10)
	b = append(b, `,"seed":null,"input_length":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	return append(b, '}')
}

// tgiStream answers /generate_stream: one event per token whatever Config.TokensPerChunk.
func (r *responder) tgiStream(model string, prompt int, details bool) {
	_ = model // TGI serves one model and names none in its events
	cp := &r.plan.choices[0]
	h := r.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	r.headers()
	r.flush()
	r.text = r.text[:0]
	for i := range cp.tokens {
		at := r.started.Add(r.sched.advance())
		if !r.wait(at) {
			return
		}
		r.stamp(i == cp.tokens-1)
		r.holdKV(1)
		start := len(r.text)
		r.text = appendWords(r.text, 1, r.rng)
		b := append(r.buf[:0], `data:{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"token":{"id":`...)
		b = strconv.AppendInt(b, int64(1000+i), 10)
		b = append(b, `,"text":"`...)
		b = append(b, r.text[start:]...)
		b = append(b, `","logprob":-0.1,"special":false},"generated_text":`...)
		last := i == cp.tokens-1
		if last {
			b = append(append(append(b, '"'), r.text...), '"')
		} else {
			b = append(b, "null"...)
		}
		b = append(b, `,"details":`...)
		if last && details {
			b = appendTGIDetails(b, cp, prompt)
		} else {
			b = append(b, "null"...)
		}
		if last {
			r.split()
			r.finished = true
		}
		if r.write(append(b, "}"+sseEnd...), KindContent, 1, 0, at) {
			r.tokens++
		}
		if last {
			r.mark(KindDone, 0, 0, at)
			r.commit()
		}
		r.flush()
		if r.gone {
			return
		}
	}
}

// tgiUnary answers /generate with TGI's timing headers.
func (r *responder) tgiUnary(model string, prompt int, details bool) {
	_ = model
	cp := &r.plan.choices[0]
	at := r.waitLast()
	if at.IsZero() {
		return
	}
	sp := r.split()
	b := append(r.buf[:0], `{"generated_text":"`...)
	b = appendWords(b, cp.tokens, r.rng)
	b = append(b, '"')
	if details {
		b = appendTGIDetails(append(b, `,"details":`...), cp, prompt)
	}
	b = append(b, '}')
	h := r.w.Header()
	h.Set("Content-Type", "application/json")
	wholeMs := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	inference := sp.prefill + sp.decode
	h.Set("X-Compute-Type", "mock")
	h.Set("X-Total-Time", wholeMs(sp.queue+inference))
	h.Set("X-Validation-Time", "0")
	h.Set("X-Queue-Time", wholeMs(sp.queue))
	h.Set("X-Inference-Time", wholeMs(inference))
	h.Set("X-Time-Per-Token", wholeMs(inference/time.Duration(cp.tokens)))
	h.Set("X-Prompt-Tokens", strconv.Itoa(prompt))
	h.Set("X-Generated-Tokens", strconv.Itoa(cp.tokens))
	r.tokens = int64(cp.tokens)
	r.finished = true
	r.body1(b, KindBody, cp.tokens, at)
}
