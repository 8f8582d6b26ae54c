package mock

import (
	"errors"
	"net/http"
	"time"
)

// stream answers a streaming request with Server-Sent Events:
//
//	headers (flushed at once)
//	role chunks, one per choice (chat, Config.RoleChunk), at arrival
//	per token step i, at arrival + offset(i): for each choice whose chunk
//	  ends at i, a reasoning or content chunk, then its finish chunk if i
//	  is its last token
//	usage chunk (when asked), data: [DONE]
//
// Events of one step are flushed together after the last of them. The
// trace is stored before [DONE] is written.
func (r *responder) stream(ep endpoint, id, model string, prompt int, usage bool) {
	cfg := &r.s.cfg
	h := r.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	r.headers()
	r.flush()

	r.head = append(r.head[:0], sseData...)
	r.head = appendHead(r.head, ep, true, id, r.arrived.Unix(), model)

	if cfg.RoleChunk && ep == chatEndpoint {
		for c := range r.plan.choices {
			b := appendIndex(append(r.buf[:0], r.head...), c)
			b = append(b, `"delta":{"role":"assistant","content":""},`...)
			b = appendFinish(b, "")
			r.write(append(b, "}]}"+sseEnd...), KindRole, 0, c, r.started)
		}
		r.flush()
	}

	k := cfg.TokensPerChunk
	var at time.Time
	for i := range r.plan.maxTokens {
		at = r.started.Add(r.sched.advance())
		if i == r.plan.streamErrAt {
			r.streamError(at)
			return
		}
		waited := false
		for c := range r.plan.choices {
			cp := &r.plan.choices[c]
			n, reasoning := chunkEnding(i, cp, k)
			if n == 0 {
				continue
			}
			if !waited {
				if !r.wait(at) {
					return
				}
				waited = true
				r.stamp(i == r.plan.maxTokens-1)
			}
			b := appendIndex(append(r.buf[:0], r.head...), c)
			kind := KindContent
			switch {
			case ep == completionEndpoint:
				b = append(b, `"text":"`...)
			case reasoning:
				b = append(b, `"delta":{"reasoning_content":"`...)
				kind = KindReasoning
			default:
				b = append(b, `"delta":{"content":"`...)
			}
			b = appendWords(b, n, r.rng)
			r.holdKV(n)
			if ep == chatEndpoint {
				b = append(b, '"', '}', ',')
			} else {
				b = append(b, '"', ',')
			}
			b = appendFinish(b, "")
			if r.write(append(b, "}]}"+sseEnd...), kind, n, c, at) {
				r.tokens += int64(n)
				if reasoning {
					r.reasoning += int64(n)
				}
			}
			if i == cp.tokens-1 {
				b = appendIndex(append(r.buf[:0], r.head...), c)
				if ep == chatEndpoint {
					b = append(b, `"delta":{},`...)
				} else {
					b = append(b, `"text":"",`...)
				}
				b = appendFinish(b, cp.finish)
				b = append(b, "}]"...)
				if cfg.Timings && !usage && i == r.plan.maxTokens-1 {
					b = r.appendTimings(append(b, ','), prompt)
				}
				r.write(append(b, "}"+sseEnd...), KindFinish, 0, c, at)
			}
			if r.gone {
				return
			}
		}
		if i < r.plan.maxTokens-1 && waited {
			r.flush()
		}
	}
	if usage {
		completion, reasoning := 0, 0
		for _, cp := range r.plan.choices {
			completion += cp.tokens
			reasoning += cp.reasoning
		}
		b := append(append(r.buf[:0], r.head...), "],"...)
		b = appendUsage(b, prompt, completion, reasoning, cfg.CachedTokens)
		if cfg.Timings {
			b = r.appendTimings(append(b, ','), prompt)
		}
		r.write(append(b, "}"+sseEnd...), KindUsage, 0, 0, at)
	}
	r.finished = true
	r.done(at)
}

// chunkEnding reports how many tokens the chunk of choice cp that ends at
// token step i carries (0 when no chunk ends there) and whether they are
// reasoning. Chunks hold k tokens, never straddle the reasoning/content
// boundary, and the last chunk of each phase may be shorter.
func chunkEnding(i int, cp *choicePlan, k int) (n int, reasoning bool) {
	if i >= cp.tokens {
		return 0, false
	}
	start, end := 0, cp.reasoning
	reasoning = i < cp.reasoning
	if !reasoning {
		start, end = cp.reasoning, cp.tokens
	}
	pos := i - start
	if i == end-1 {
		return pos%k + 1, reasoning
	}
	if (pos+1)%k == 0 {
		return k, reasoning
	}
	return 0, reasoning
}

// streamError ends the stream at at with an error event and [DONE], as
// vLLM does when generation fails mid-stream.
func (r *responder) streamError(at time.Time) {
	if !r.wait(at) {
		return
	}
	r.s.streamErrs.Add(1)
	b := append(r.buf[:0], sseData...)
	b = appendErrorObject(b, "mockllm: injected stream error", "server_error", http.StatusInternalServerError)
	r.write(append(b, sseEnd...), KindError, 0, 0, at)
	r.done(at)
}

// done stores the trace, then writes data: [DONE] and flushes.
func (r *responder) done(at time.Time) {
	if r.gone {
		return
	}
	r.mark(KindDone, 0, 0, at)
	r.commit()
	r.writeRaw([]byte(sseDone))
	r.flush()
}

// write records and writes one event, unless the client is gone, and
// reports whether it tried. b must have been built on r.buf, whose grown
// capacity it keeps.
func (r *responder) write(b []byte, kind string, tokens, choice int, intended time.Time) bool {
	r.buf = b[:0]
	if r.gone {
		return false
	}
	r.mark(kind, tokens, choice, intended)
	r.writeRaw(b)
	return true
}

func (r *responder) writeRaw(b []byte) {
	if r.gone {
		return
	}
	r.events++
	if _, err := r.w.Write(b); err != nil {
		r.gone = true
	}
}

// flush pushes buffered events to the client. A writer that cannot flush
// (http.ErrNotSupported) is tolerated; any other error means the client is
// gone.
func (r *responder) flush() {
	if r.gone {
		return
	}
	if err := r.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		r.gone = true
	}
}
