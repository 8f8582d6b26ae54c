package trace

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// The one writer of Mooncake trace lines and payload lines (for the recorder, MooncakeWriter and
// the merge): it appends to a caller's buffer and allocates nothing for ASCII strings.

// Session is a request's place in its conversation: its session id ("" when it has none), and
// the think time before it when it is a later turn whose previous turn was seen (HasDelay).
type Session struct {
	ID       string
	Delay    time.Duration
	HasDelay bool
}

// TraceLine is one Mooncake trace line. Times are written exactly (AppendMs: the recorder
// truncates its own to the microsecond); negative times and counts as 0; hash_ids always,
// empty when there are none; model and tenant when not empty (AIPerf ignores fields it does
// not know).
type TraceLine struct {
	Timestamp                 time.Duration // arrival from the start of the file
	InputLength, OutputLength int64
	HashIDs                   []int64
	Session                   Session // session_id and delay
	Model, Tenant             string
}

// AppendTraceLine appends l as one mooncake_trace line with its newline: "timestamp",
// "input_length", "output_length", "hash_ids", then "session_id" and "delay", "model" and
// "tenant" when set.
func AppendTraceLine(b []byte, l *TraceLine) []byte {
	b = append(b, `{"timestamp": `...)
	b = AppendMs(b, max(l.Timestamp, 0))
	b = append(b, `, "input_length": `...)
	b = strconv.AppendInt(b, max(l.InputLength, 0), 10)
	b = append(b, `, "output_length": `...)
	b = strconv.AppendInt(b, max(l.OutputLength, 0), 10)
	b = append(b, `, "hash_ids": [`...)
	for i, id := range l.HashIDs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, ']')
	b = appendSession(b, l.Session, "delay")
	if l.Model != "" {
		b = append(b, `, "model": `...)
		b = appendString(b, l.Model)
	}
	if l.Tenant != "" {
		b = append(b, `, "tenant": `...)
		b = appendString(b, l.Tenant)
	}
	return append(b, "}\n"...)
}

// PayloadLine is one line of a payloads file: a request body (a one-line JSON object when it is
// valid UTF-8) with what a replay needs to send it again. Times are written in milliseconds
// to the microsecond; negative times and counts as 0.
type PayloadLine struct {
	Timestamp                 time.Duration // arrival from the start of the file
	RequestID, Path           string
	InputTokens, OutputTokens int64
	Session                   Session // session_id and delay_ms
	Body                      []byte
}

// PayloadLineStart is how every payload line begins: the number after it is the line's
// timestamp_ms (AppendPayloadStart).
const PayloadLineStart = `{"timestamp_ms": `

// AppendPayloadStart appends PayloadLineStart and ts in milliseconds with microsecond
// precision, as payload lines give their times; a negative ts as 0.
func AppendPayloadStart(b []byte, ts time.Duration) []byte {
	return AppendMs(append(b, PayloadLineStart...), max(ts, 0).Truncate(time.Microsecond))
}

// AppendPayloadLine appends l as one payload line with its newline: "timestamp_ms",
// "request_id", "path", "input_tokens", "output_tokens", "session_id" and "delay_ms" when set,
// and the body as "payload". A body that is not valid UTF-8 is not JSON text (RFC 8259 §8.1),
// so it is written as "payload_b64", the standard base64 of its exact bytes, which keeps every
// line of the file valid JSON and lets a replay send the same bytes.
func AppendPayloadLine(b []byte, l *PayloadLine) []byte {
	b = AppendPayloadStart(b, l.Timestamp)
	b = append(b, `, "request_id": `...)
	b = appendString(b, l.RequestID)
	b = append(b, `, "path": `...)
	b = appendString(b, l.Path)
	b = append(b, `, "input_tokens": `...)
	b = strconv.AppendInt(b, max(l.InputTokens, 0), 10)
	b = append(b, `, "output_tokens": `...)
	b = strconv.AppendInt(b, max(l.OutputTokens, 0), 10)
	sess := l.Session
	sess.Delay = max(sess.Delay, 0).Truncate(time.Microsecond)
	b = appendSession(b, sess, "delay_ms")
	if utf8.Valid(l.Body) {
		b = append(b, `, "payload": `...)
		b = append(b, l.Body...)
	} else {
		b = append(b, `, "payload_b64": "`...)
		b = base64.StdEncoding.AppendEncode(b, l.Body)
		b = append(b, '"')
	}
	return append(b, "}\n"...)
}

// appendSession writes the session fields of s, with the delay's key named delayKey; a
// negative delay as 0.
func appendSession(b []byte, s Session, delayKey string) []byte {
	if s.ID == "" {
		return b
	}
	b = append(b, `, "session_id": `...)
	b = appendString(b, s.ID)
	if s.HasDelay {
		b = append(b, `, "`...)
		b = append(b, delayKey...)
		b = append(b, `": `...)
		b = AppendMs(b, max(s.Delay, 0))
	}
	return b
}

// appendString writes s as a JSON string, as encoding/json does (HTML characters escaped).
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
