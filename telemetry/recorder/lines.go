package recorder

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/llmtap/llmtap/telemetry/record"
)

// appendMs writes a duration as milliseconds with microsecond precision.
func appendMs(b []byte, d time.Duration) []byte {
	if d < 0 {
		d = 0
	}
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', -1, 64)
}

// appendString writes s as a JSON string.
func appendString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

// turn is a request's place in its session: the session id, and the think time before it
// when it is a later turn whose predecessor the recorder saw (see sessions.turn).
type turn struct {
	id       string
	delay    time.Duration
	hasDelay bool
}

// appendSession writes the session fields of t, with the delay's key named delayKey.
func appendSession(b []byte, t turn, delayKey string) []byte {
	if t.id == "" {
		return b
	}
	b = append(b, `, "session_id": `...)
	b = appendString(b, t.id)
	if t.hasDelay {
		b = append(b, `, "`...)
		b = append(b, delayKey...)
		b = append(b, `": `...)
		b = appendMs(b, t.delay)
	}
	return b
}

// appendTrace writes one mooncake_trace line.
func appendTrace(b []byte, r *record.Record, ts time.Duration, ids []int64, t turn) []byte {
	b = append(b, `{"timestamp": `...)
	b = appendMs(b, ts)
	b = append(b, `, "input_length": `...)
	b = strconv.AppendInt(b, max(r.InputTokens, 0), 10)
	b = append(b, `, "output_length": `...)
	b = strconv.AppendInt(b, max(r.OutputTokens, 0), 10)
	b = append(b, `, "hash_ids": [`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, ']')
	b = appendSession(b, t, "delay")
	if r.Model != "" && r.Model != record.UnknownModel {
		b = append(b, `, "model": `...)
		b = appendString(b, r.Model)
	}
	if r.Tenant != "" {
		// AIPerf's reader ignores fields it does not know, as it does model.
		b = append(b, `, "tenant": `...)
		b = appendString(b, r.Tenant)
	}
	return append(b, "}\n"...)
}

// appendPayload writes one payload-file line around body, a one-line JSON object. A body that
// is not valid UTF-8 is not JSON text (RFC 8259 §8.1), so it is written as "payload_b64", the
// standard base64 of its exact bytes, which keeps every line of the file valid JSON and lets
// a replay send the same bytes.
func appendPayload(b []byte, r *record.Record, ts time.Duration, body []byte, t turn) []byte {
	b = append(b, `{"timestamp_ms": `...)
	b = appendMs(b, ts)
	b = append(b, `, "request_id": `...)
	b = appendString(b, r.RequestID)
	b = append(b, `, "path": `...)
	b = appendString(b, r.Path)
	b = append(b, `, "input_tokens": `...)
	b = strconv.AppendInt(b, max(r.InputTokens, 0), 10)
	b = append(b, `, "output_tokens": `...)
	b = strconv.AppendInt(b, max(r.OutputTokens, 0), 10)
	b = appendSession(b, t, "delay_ms")
	if utf8.Valid(body) {
		b = append(b, `, "payload": `...)
		b = append(b, body...)
	} else {
		b = append(b, `, "payload_b64": "`...)
		b = base64.StdEncoding.AppendEncode(b, body)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}
