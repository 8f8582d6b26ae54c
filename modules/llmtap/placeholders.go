package llmtap

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmtap/llmtap/telemetry/meter"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Placeholders of a measured request, set when its response has ended, before the handler
// returns and so before Caddy writes the access log; use them in log formats and log_append
// ({http.vars.llmtap.ttft_ms}, …). A figure not known when the response ends is the empty
// string: TTFT of a request that streamed no content, ITL with fewer than two output tokens,
// and token counts that llmtap's tokenizer computes later, off the request path (a response
// without the server's usage: its record has the count, the placeholder is empty).
const (
	// VarTTFT is the time to first token in milliseconds.
	VarTTFT = "llmtap.ttft_ms"
	// VarITL is the inter-token latency in milliseconds.
	VarITL = "llmtap.itl_ms"
	// VarInputTokens and VarOutputTokens are the token counts the server reported (or, for
	// the output, the content-event count of a stream without text to count).
	VarInputTokens  = "llmtap.input_tokens"
	VarOutputTokens = "llmtap.output_tokens"
	// VarTenant is the request's tenant (the handler's tenant option), empty without one.
	VarTenant = "llmtap.tenant"
)

// expose sets the placeholders of rec for r and, when asked and possible, the Server-Timing
// trailer. It runs on the request path once per request, never per token.
func (h *Handler) expose(r *http.Request, tw *tapWriter, rec *record.Record) {
	ctx := r.Context()
	caddyhttp.SetVar(ctx, VarTTFT, msVar(rec.TTFTMs))
	caddyhttp.SetVar(ctx, VarITL, itlVar(rec))
	caddyhttp.SetVar(ctx, VarInputTokens, countVar(rec.InputTokens, rec.InputTokensSource))
	caddyhttp.SetVar(ctx, VarOutputTokens, countVar(rec.OutputTokens, rec.OutputTokensSource))
	caddyhttp.SetVar(ctx, VarTenant, rec.Tenant)
	if h.ServerTiming && tw != nil && trailerOK(r, tw) {
		tw.Header().Set(http.TrailerPrefix+"Server-Timing", serverTiming(rec))
	}
}

// msVar is a time placeholder: the milliseconds, or "" when not known.
func msVar(ms *float64) any {
	if ms == nil {
		return ""
	}
	return *ms
}

// itlVar is the ITL placeholder: known once the output count is (Finalize sets the record's
// ITL later, off the request path, from the same figures).
func itlVar(rec *record.Record) any {
	if rec.ITLMs != nil {
		return *rec.ITLMs
	}
	if countVar(rec.OutputTokens, rec.OutputTokensSource) == "" {
		return ""
	}
	if itl, ok := meter.ITL(rec); ok {
		return itl
	}
	return ""
}

// countVar is a token-count placeholder: the count when the server reported it (or it is the
// event count), "" when the tokenizer has yet to count it or there is none.
func countVar(n int64, source string) any {
	if source == record.SourceUsage || source == record.SourceEvents {
		return n
	}
	return ""
}

// trailerOK reports whether the response to r can end with a trailer without changing
// anything else the client receives: HTTP/2 and HTTP/3 responses always can; an HTTP/1.1
// response only when the client said it takes trailers (TE: trailers) and the response is not
// framed by a Content-Length (a trailer needs chunked framing). A response with no headers
// sent (an error Caddy writes later), an upgraded connection or a HEAD request gets none.
func trailerOK(r *http.Request, tw *tapWriter) bool {
	if !tw.wroteHeader || tw.upgraded != nil || r.Method == http.MethodHead {
		return false
	}
	if r.ProtoMajor >= 2 {
		return true
	}
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || tw.Header().Get("Content-Length") != "" {
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

// serverTiming renders rec's figures as a Server-Timing value (W3C Server Timing):
// ttft and itl with their durations in milliseconds when known, and llmtap with the token
// counts and tenant as its description.
func serverTiming(rec *record.Record) string {
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
	if itl, ok := itlVar(rec).(float64); ok {
		metric("itl", &itl)
	}
	metric("total", &rec.DurationMs)
	desc := "out=" + strconv.FormatInt(rec.OutputTokens, 10) + " (" + rec.OutputTokensSource + ")"
	if rec.OutputTokensSource == record.SourceTokenizer || rec.OutputTokensSource == record.SourceNone {
		desc = "out=unknown"
	}
	b = append(b, ", llmtap;desc="...)
	return string(strconv.AppendQuote(b, desc))
}
