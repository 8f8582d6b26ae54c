package llmtap

import (
	"net/http"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/inject"
	"github.com/llmtap/llmtap/telemetry/record"
)

// injectUsage applies the inject_usage option to one request (inject.Request): the request's
// API is the handler's api option, else the one its path names. Without the option, w is
// returned unchanged.
func (h *Handler) injectUsage(w http.ResponseWriter, r *http.Request, limit int, rec *record.Record) (_ http.ResponseWriter, end func(), original []byte) {
	if !h.InjectUsage {
		return w, func() {}, nil
	}
	api := h.API
	if api == "" {
		api = decode.APIForPath(r.URL.Path)
	}
	return inject.Request(w, r, api, limit, h.MaxEventSize, rec)
}
