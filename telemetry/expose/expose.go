// Package expose computes what a host exposes of a measured request when its response ends,
// on the request path: the values of its placeholders (times in milliseconds and token
// counts, "" when not known yet) and its Server-Timing trailer, and whether a response can
// carry that trailer without changing anything else the client receives.
package expose

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Ms is a time placeholder: the milliseconds, or "" when not known.
func Ms(ms *float64) any {
	if ms == nil {
		return ""
	}
	return *ms
}

// ITL is the ITL placeholder: known once the output count is (Finalize sets the record's
// ITL later, off the request path, from the same figures).
func ITL(rec *record.Record) any {
	if rec.ITLMs != nil {
		return *rec.ITLMs
	}
	if Count(rec.OutputTokens, rec.OutputTokensSource) == "" {
		return ""
	}
	if itl, ok := meter.ITL(rec); ok {
		return itl
	}
	return ""
}

// Split is the time-split placeholders of rec (its record's time_split): the server's queue,
// prefill and decode as the server reported them, and the network's part of TTFT, in
// milliseconds; each "" when not known (no split, or a server that reports none of it).
func Split(rec *record.Record) (queue, prefill, decode, network any) {
	s := rec.Split
	if s == nil {
		return "", "", "", ""
	}
	return Ms(s.QueueMs), Ms(s.PrefillMs), Ms(s.DecodeMs), Ms(s.NetworkMs)
}

// Count is a token-count placeholder: the count when the server reported it (or it is the
// event count), "" when the tokenizer has yet to count it or there is none.
func Count(n int64, source string) any {
	if source == record.SourceUsage || source == record.SourceEvents {
		return n
	}
	return ""
}

// TrailerOK reports whether the response to r, whose headers are sent, can end with a
// trailer without changing anything else the client receives: HTTP/2 and HTTP/3 responses
// always can; an HTTP/1.1 response only when the client said it takes trailers (TE: trailers)
// and the response is not framed by a Content-Length (a trailer needs chunked framing),
// respHeader being the response's header. A HEAD request gets none.
func TrailerOK(r *http.Request, respHeader http.Header) bool {
	if r.Method == http.MethodHead {
		return false
	}
	if r.ProtoMajor >= 2 {
		return true
	}
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || respHeader.Get("Content-Length") != "" {
		return false
	}
	for _, v := range r.Header.Values("TE") {
		for t := range strings.SplitSeq(v, ",") {
			if name, _, _ := strings.Cut(strings.TrimSpace(t), ";"); strings.EqualFold(name, "trailers") {
				return true
			}
		}
	}
	return false
}

// ServerTiming renders rec's figures as a Server-Timing value (W3C Server Timing):
// ttft, itl, total and the time split (queue, prefill, decode, network) with their durations
// in milliseconds when known, and llmtap with the output token count as its description.
func ServerTiming(rec *record.Record) string {
	var b []byte
	metric := func(name string, ms *float64) {
		if ms == nil {
			return
		}
		if len(b) > 0 {
			b = append(b, ", "...)
		}
		b = append(b, name...)
		b = append(b, ";dur="...)
		b = strconv.AppendFloat(b, *ms, 'f', 3, 64)
	}
	metric("ttft", rec.TTFTMs)
	if itl, ok := ITL(rec).(float64); ok {
		metric("itl", &itl)
	}
	metric("total", &rec.DurationMs)
	if s := rec.Split; s != nil {
		metric("queue", s.QueueMs)
		metric("prefill", s.PrefillMs)
		metric("decode", s.DecodeMs)
		metric("network", s.NetworkMs)
	}
	desc := "out=" + strconv.FormatInt(rec.OutputTokens, 10) + " (" + rec.OutputTokensSource + ")"
	if rec.OutputTokensSource == record.SourceTokenizer || rec.OutputTokensSource == record.SourceNone {
		desc = "out=unknown"
	}
	b = append(b, ", llmtap;desc="...)
	return string(strconv.AppendQuote(b, desc))
}

// TimingName is the name of llmtap's own Server-Timing entry (the one with the output count
// as its description).
const TimingName = "llmtap"

// WithoutOwnTiming returns the Server-Timing field values vs less their entries named llmtap
// (any case), so that an upstream cannot put an entry that looks like llmtap's beside the one
// llmtap adds; every other entry is kept as written. Entries are split on the commas outside
// quoted strings (RFC 9110's list syntax; a desc may be a quoted string holding commas). A
// value left with no entry is dropped. vs itself is returned when no entry is removed.
func WithoutOwnTiming(vs []string) []string {
	var out []string
	changed := false
	for i, v := range vs {
		kept, removed := withoutOwn(v)
		if removed && !changed {
			changed = true
			out = append(make([]string, 0, len(vs)), vs[:i]...)
		}
		if changed && strings.TrimSpace(kept) != "" {
			out = append(out, kept)
		}
	}
	if !changed {
		return vs
	}
	return out
}

// withoutOwn is WithoutOwnTiming for one field value.
func withoutOwn(v string) (string, bool) {
	if !strings.Contains(strings.ToLower(v), TimingName) {
		return v, false
	}
	var kept []string
	removed := false
	for _, e := range splitList(v) {
		name, _, _ := strings.Cut(e, ";")
		if strings.EqualFold(strings.TrimSpace(name), TimingName) {
			removed = true
			continue
		}
		kept = append(kept, strings.TrimSpace(e))
	}
	return strings.Join(kept, ", "), removed
}

// splitList splits a field value on the commas outside quoted strings (a backslash escapes
// the next character inside one).
func splitList(v string) []string {
	var parts []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			parts = append(parts, v[start:i])
			start = i + 1
		}
	}
	return append(parts, v[start:])
}

// StripOwnTiming removes the entries named llmtap from the Server-Timing field key of h (the
// header, or its announced trailer), deleting the field when no entry is left.
func StripOwnTiming(h http.Header, key string) {
	vs, ok := h[key]
	if !ok {
		return
	}
	if kept := WithoutOwnTiming(vs); len(kept) > 0 {
		h[key] = kept
	} else {
		delete(h, key)
	}
}

// AddTrailer adds llmtap's Server-Timing entry of rec as a trailer of the response whose
// header is h. The upstream's trailers are in the header by then (a proxy copies them after the
// body, announced ones under their own name): its llmtap entries go, the rest stays beside
// llmtap's entry.
func AddTrailer(h http.Header, rec *record.Record) {
	StripOwnTiming(h, "Server-Timing")
	k := http.TrailerPrefix + "Server-Timing"
	h[k] = append(WithoutOwnTiming(h[k]), ServerTiming(rec))
}
