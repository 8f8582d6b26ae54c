package llmtap

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/telemetry/expose"
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
	// VarQueue, VarPrefill, VarDecode and VarNetwork are the record's time_split queue_ms,
	// prefill_ms, decode_ms and network_ms: empty when the server reports none of it. (No cost
	// placeholder: a request's cost is priced after its response, in the record pipeline.)
	VarQueue, VarPrefill, VarDecode, VarNetwork = "llmtap.queue_ms", "llmtap.prefill_ms", "llmtap.decode_ms", "llmtap.network_ms"
)

// lateVars names the variables of the slots of expose.Late.
var lateVars = [expose.LateSlots]string{
	expose.SlotTTFT: VarTTFT, expose.SlotITL: VarITL, expose.SlotInputTokens: VarInputTokens,
	expose.SlotOutputTokens: VarOutputTokens, expose.SlotTenant: VarTenant, expose.SlotQueue: VarQueue,
	expose.SlotPrefill: VarPrefill, expose.SlotDecode: VarDecode, expose.SlotNetwork: VarNetwork,
}

// installVars sets the placeholders of r to the slots of a new expose.Late, before r is
// proxied: the variables map is not written after that (see expose.Late). The tenant is known
// now; the rest is filled by expose when the response ends.
func installVars(r *http.Request, tenant string) *expose.Late {
	late := expose.NewLate()
	for i, k := range lateVars {
		caddyhttp.SetVar(r.Context(), k, late.Slot(i))
	}
	late.Set(expose.SlotTenant, tenant)
	return late
}

// expose fills the placeholders of rec for r and, when asked and possible, the Server-Timing
// trailer. It runs on the request path once per request, never per token.
func (h *Handler) expose(r *http.Request, tw *tapWriter, rec *record.Record) {
	tw.late.SetRecord(rec)
	// A response with no headers sent (an error Caddy writes later) or an upgraded
	// connection gets no trailer (telemetry/expose: the rest of the rule).
	if h.ServerTiming && tw.wroteHeader && tw.upgraded == nil && expose.TrailerOK(r, tw.Header()) {
		expose.AddTrailer(tw.Header(), rec)
	}
}

// spanUpstream records on span the upstream reverse_proxy sent the request to, read from the
// placeholders it sets ({http.reverse_proxy.upstream.host}, …port); nothing when another
// handler answered.
func spanUpstream(span trace.Span, r *http.Request) {
	otel.SetServer(span, upstreamOf(r, "http.reverse_proxy.upstream.host"), upstreamOf(r, "http.reverse_proxy.upstream.port"))
}

// upstreamOf is a placeholder reverse_proxy sets about the upstream it sent r to, or "".
func upstreamOf(r *http.Request, key string) string {
	repl, _ := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if repl == nil {
		return ""
	}
	v, _ := repl.GetString(key)
	return v
}
