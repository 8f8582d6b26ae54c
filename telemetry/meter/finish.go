package meter

import (
	"slices"
	"time"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// Finish closes the measurement at time end and returns the record, which no longer refers to
// the meter's buffers. failure is the error class the caller observed (record.ErrCanceled,
// record.ErrUpstream, …) or "" when the exchange completed; errMsg describes it.
//
// Finish only copies what was measured; Finalize must run on the returned record (off the
// request path) before it is read.
func (m *Meter) Finish(end time.Time, failure, errMsg string) *record.Record {
	r := new(record.Record)
	*r = m.rec
	r.API = m.api
	r.DurationMs = record.Ms(end.Sub(m.t0))
	r.Bytes = m.bytes
	if m.headersAt >= 0 {
		r.HeadersMs = record.MsPtr(time.Duration(m.headersAt))
	}

	m.endInflate()
	r.DecodedBytes, r.DecodeStopped = m.decoded, m.decodeStop
	truncated := false
	switch m.mode {
	case modeSSE, modeNDJSON:
		// A stream whose decoding stopped at a bound was not seen to its end: what the framer
		// holds is where measuring stopped, not where the stream was cut.
		truncated = m.framer.Close() && m.decodeStop == ""
	case modeBody:
		if len(m.body) > 0 && !m.bodyTruncated {
			if m.dec.Body(m.body) == decode.Error {
				m.streamErr = true
			}
		}
	}

	res := m.dec.Result()
	r.Events = m.events
	r.ContentEvents = m.contentEvents
	r.Oversized = m.oversized
	r.Malformed = res.Malformed + m.inflateFails
	r.Choices = res.Choices
	r.ToolCalls = res.ToolCalls
	r.Refusal = res.Refusal
	r.Finish = res.FinishReason
	if res.Model != "" {
		r.Model = res.Model
	}
	r.Server = serverTimings(res.ServerTimings, m.hdrTimings) // split.go

	if m.mode == modeSSE || m.mode == modeNDJSON {
		if m.firstContent >= 0 {
			r.TTFTMs = record.MsPtr(time.Duration(m.firstContent))
			r.RequestLatencyMs = record.MsPtr(time.Duration(m.lastContent))
		}
		if m.firstOutput >= 0 {
			r.TTFOMs = record.MsPtr(time.Duration(m.firstOutput))
		}
		if m.secondContent >= 0 {
			r.TTSTMs = record.MsPtr(time.Duration(m.secondContent - m.firstContent))
		}
		r.InterChunkMs = slices.Clone(m.gaps)
		r.InterChunkDropped = m.gapsDropped
	}
	r.Split = m.split(r) // split.go
	if r.RequestLatencyMs == nil && m.rec.Status >= 200 && m.rec.Status < 400 {
		// A non-streaming response (or a stream without content) ends when its body is complete.
		// An upgraded connection (101) has no body: duration_ms is its lifetime.
		d := r.DurationMs
		r.RequestLatencyMs = &d
	}

	// Usage as reported by the server.
	r.InputTokens, r.OutputTokens, r.ReasoningTokens, r.CachedTokens = -1, -1, -1, -1
	if res.HasUsage {
		u := res.Usage
		r.UsageOutputTokens = u.OutputTokens
		if u.InputTokens >= 0 {
			r.InputTokens, r.InputTokensSource = u.InputTokens, record.SourceUsage
		}
		if u.OutputTokens >= 0 {
			r.OutputTokens, r.OutputTokensSource = u.OutputTokens, record.SourceUsage
		}
		r.ReasoningTokens = u.ReasoningTokens
		r.CachedTokens = u.CachedTokens
		r.CacheWriteTokens = max(u.CacheWriteTokens, 0)
	}
	if r.OutputTokensSource == record.SourceNone && (len(res.Text) > 0 || len(res.ReasoningText) > 0) {
		// Counted by Finalize, off the request path.
		r.OutputTokensSource = record.SourceTokenizer
		r.OutputText = append(slices.Clone(res.Text), res.ReasoningText...)
		r.ReasoningText = slices.Clone(res.ReasoningText)
	} else if r.OutputTokensSource == record.SourceNone && m.contentEvents > 0 {
		r.OutputTokens, r.OutputTokensSource = int64(m.contentEvents), record.SourceEvents
	}
	r.RequestBody = m.reqBody // parsed by Finalize

	r.Error, r.ErrorMsg = classify(outcome{
		failure: failure, errMsg: errMsg,
		status: m.rec.Status, stream: r.Stream, api: m.api,
		ended: m.ended(res), streamErr: m.streamErr, upstreamMsg: res.ErrorMessage,
		truncated: truncated, decodeStop: m.decodeStop, inflateFails: m.inflateFails,
		contentEvents: m.contentEvents, malformed: r.Malformed,
	})
	return r
}

// ended reports whether the stream reached the end of a complete response: the event that ends
// one (OpenAI's "[DONE]", Anthropic's message_stop, …), or, for the OpenAI APIs, every choice's
// finish_reason and then the usage chunk when the request asked for one
// (stream_options.include_usage). Cerebras, Writer, Perplexity, llama.cpp-based servers and TGI
// before 2.1 end their streams there without "[DONE]"; a stream cut after the finish_reason
// but before the usage it promised is not whole. The request is read only in that last case,
// which a stream ending with "[DONE]" or without every finish_reason never reaches.
func (m *Meter) ended(res *decode.Result) bool {
	switch {
	case m.sawDone:
		return true
	case !res.Ended:
		return false
	case res.HasUsage || m.api != decode.APIOpenAIChat && m.api != decode.APIOpenAICompletions:
		return true
	}
	return !decode.ParseRequestFor(m.api, m.reqBody, 0).IncludeUsage
}

// Finalize completes a record returned by Finish: it reads the request body (model, prompt),
// counts tokens the server did not report with c (nil: the default tokenizer, o200k_base),
// and derives ITL. It is the expensive part of measuring and runs off the request path. The
// request body was already bounded when it was captured, so the whole prompt it holds is
// counted. It leaves RequestBody in place for the sinks; the record pipeline clears it after
// them.
func Finalize(r *record.Record, c tokens.Counter) {
	if c == nil {
		c = tokens.Default
	}
	if len(r.RequestBody) > 0 {
		req := decode.ParseRequestFor(r.API, r.RequestBody, len(r.RequestBody))
		r.RequestModel = req.Model
		if r.Model == "" {
			r.Model = req.Model
		}
		if r.InputTokensSource == record.SourceNone && len(req.Prompt) > 0 {
			if ids, n, err := countPrompt(c, req.Prompt); err == nil {
				r.InputTokens, r.InputTokensSource, r.Tokenizer = int64(n), record.SourceTokenizer, c.Name()
				r.PromptIDs = ids
			}
		}
	}
	if r.Model == "" {
		r.Model = record.UnknownModel // one spelling on every surface
	}
	// The request body stays on the record for the sinks (the recorder writes payloads and
	// hashes the prompt); the pipeline drops it once they have run.
	if r.OutputTokensSource == record.SourceTokenizer && r.OutputTokens < 0 {
		n, err := c.Count(r.OutputText)
		if err != nil {
			r.OutputTokens, r.OutputTokensSource = int64(r.ContentEvents), record.SourceEvents
		} else {
			r.OutputTokens, r.Tokenizer = int64(n), c.Name()
			if len(r.ReasoningText) > 0 {
				if rn, err := c.Count(r.ReasoningText); err == nil {
					r.ReasoningTokens = int64(rn)
				}
			}
		}
	}
	r.OutputText, r.ReasoningText = nil, nil
	if r.OutputTokens < 0 {
		r.OutputTokens = 0
	}
	if r.InputTokens < 0 {
		r.InputTokens = 0
	}
	if r.ReasoningTokens < 0 {
		r.ReasoningTokens = 0
	}
	if r.CachedTokens < 0 {
		r.CachedTokens = 0
	}
	if itl, ok := ITL(r); ok {
		r.ITLMs = &itl
	}
	r.BoundStrings() // models, ids, paths and messages come from clients and upstreams
}

// countPrompt counts the tokens of a prompt with c, keeping their ids when c gives them
// (tokens.Encoder: both of llmtap's tokenizers), so that the recorder cuts the trace's
// hash_ids from them rather than tokenizing the prompt again; its Count is the ids' length.
func countPrompt(c tokens.Counter, prompt []byte) (ids []uint, n int, err error) {
	if e, ok := c.(tokens.Encoder); ok {
		ids, err = e.IDs(prompt)
		return ids, len(ids), err
	}
	n, err = c.Count(prompt)
	return nil, n, err
}

// outcome is what the error classification of a finished exchange reads.
type outcome struct {
	failure, errMsg string // the error class the caller observed and its message; "" when none
	status          int    // the response status (0 when none was written)
	stream          bool   // the request asked for a stream
	api             string // the decoder's API name
	ended           bool   // the stream's end was seen ([DONE] or the API's final event)
	streamErr       bool   // the stream carried an error event, or the body decoded as one
	upstreamMsg     string // the error message the upstream sent, if any
	truncated       bool   // the framer held part of an event when the stream ended
	decodeStop      string // which bound stopped decoding early, if one did
	inflateFails    int    // pieces of the body that did not decode in its Content-Encoding
	contentEvents   int    // events that carried content
	malformed       int    // events (or bodies) that did not decode as api
}

// classify returns the error class of a finished exchange (one of record's Err* constants, ""
// when it succeeded) and its message, the most specific class first.
func classify(o outcome) (class, msg string) {
	// A client that closes as soon as it has read the end of the stream (the OpenAI SDKs stop
	// at [DONE]) may do so before the proxy finished its own bookkeeping: that response was
	// complete, not canceled.
	if o.failure == record.ErrCanceled && o.stream && o.ended {
		o.failure, o.errMsg = "", ""
	}
	switch {
	case o.failure != "":
		return o.failure, o.errMsg
	case o.status >= 400:
		return record.ErrHTTP, o.upstreamMsg
	case o.streamErr:
		return record.ErrStream, o.upstreamMsg
	case o.decodeStop == DecodeStoppedRatio:
		return record.ErrMalformed, errInflateBomb.Error() + " (a decompression bomb): measuring stopped there"
	case o.inflateFails > 0 && o.contentEvents == 0:
		// Nothing could be measured because the body did not decode in its Content-Encoding.
		return record.ErrMalformed, "the body could not be decoded in its Content-Encoding"
	case o.truncated:
		return record.ErrTruncated, "the stream ended inside an event"
	case o.stream && !o.ended && decode.ExpectsDone(o.api) && o.decodeStop == "":
		return record.ErrTruncated, "the stream ended without the event that ends a complete " + o.api + " response"
	case o.malformed > 0 && o.contentEvents == 0:
		return record.ErrMalformed, "no event of the stream could be decoded as " + o.api
	}
	return "", ""
}

// ITL is the inter-token latency of r, (request latency − TTFT) / (output tokens − 1), from its
// current figures; false when it does not apply (no TTFT, fewer than two output tokens).
func ITL(r *record.Record) (float64, bool) {
	if r.TTFTMs == nil || r.RequestLatencyMs == nil || r.OutputTokens < 2 {
		return 0, false
	}
	return (*r.RequestLatencyMs - *r.TTFTMs) / float64(r.OutputTokens-1), true
}
