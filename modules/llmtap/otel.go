package llmtap

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/telemetry/otelexport"
)

// spanUpstream records on span the upstream reverse_proxy sent the request to, read from the
// placeholders it sets ({http.reverse_proxy.upstream.host}, …port); nothing when another
// handler answered.
func spanUpstream(span any, r *http.Request) {
	otelexport.SetServer(span, upstreamOf(r, "http.reverse_proxy.upstream.host"), upstreamOf(r, "http.reverse_proxy.upstream.port"))
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
