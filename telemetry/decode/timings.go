package decode

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// Formats of ServerTimings: which server's shape the timings were read from.
const (
	FormatOllama   = "ollama"    // the final object's *_duration fields, nanoseconds
	FormatLlamaCpp = "llama.cpp" // the "timings" object, float milliseconds
	FormatTGI      = "tgi"       // /generate's x-*-time headers, whole milliseconds
)

// maxReportedMs bounds a duration a server reports, in milliseconds (about 115 days): a larger
// value, like a negative one or one that is not a number, is treated as not reported rather
// than overflowing a time.Duration.
const maxReportedMs = 1e10

// llamaTimings folds llama.cpp's "timings" object, which its server puts on the last chunk of
// an OpenAI-compatible stream (and on every chunk with timings_per_token) and on bodies:
// {"prompt_n":…, "prompt_ms":…, "predicted_n":…, "predicted_ms":…, …}. prompt_ms is the
// prefill (the first token included), predicted_ms the decode that follows; llama.cpp reports
// no queue time. A later object replaces an earlier one: with timings_per_token each chunk
// carries the totals so far.
func llamaTimings(res *Result, v *fastjson.Value) {
	o := v.GetObject()
	if o == nil {
		return
	}
	var st ServerTimings
	o.Visit(func(k []byte, x *fastjson.Value) {
		switch string(k) {
		case "prompt_n":
			st.PromptEvalCount = max(count(x), 0)
		case "predicted_n":
			st.EvalCount = max(count(x), 0)
		case "prompt_ms":
			st.PromptEvalDuration = msValue(x)
		case "predicted_ms":
			st.EvalDuration = msValue(x)
		}
	})
	if st == (ServerTimings{}) {
		return
	}
	st.Format = FormatLlamaCpp
	res.ServerTimings = st
}

// msValue reads a duration in float milliseconds; anything else is zero, "not reported".
func msValue(v *fastjson.Value) time.Duration {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return 0
	}
	return msDuration(v.GetFloat64())
}

func msDuration(f float64) time.Duration {
	if !(f > 0) || f > maxReportedMs || math.IsInf(f, 0) {
		return 0
	}
	return time.Duration(f * float64(time.Millisecond))
}

// TGIHeaderTimings reads the timing headers TGI's router sets on a /generate response (whole
// milliseconds): x-queue-time, x-inference-time (prefill and decode together), x-total-time
// (validation, queue and inference), with x-prompt-tokens and x-generated-tokens. It reports
// false when the response carries none of the times, as TGI's streams do (their headers go
// out before the times are known).
func TGIHeaderTimings(h http.Header) (ServerTimings, bool) {
	q, okq := headerMs(h, "X-Queue-Time")
	inf, oki := headerMs(h, "X-Inference-Time")
	total, okt := headerMs(h, "X-Total-Time")
	if !okq && !oki && !okt {
		return ServerTimings{}, false
	}
	st := ServerTimings{Format: FormatTGI, QueueDuration: q, InferenceDuration: inf, TotalDuration: total}
	st.PromptEvalCount = headerCount(h, "X-Prompt-Tokens")
	st.EvalCount = headerCount(h, "X-Generated-Tokens")
	return st, true
}

// headerMs reads a header of whole (or decimal) milliseconds; ok is false when it is absent or
// not a number in range.
func headerMs(h http.Header, name string) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get(name))
	if v == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > maxReportedMs {
		return 0, false
	}
	return msDuration(f), true
}

func headerCount(h http.Header, name string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(h.Get(name)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
