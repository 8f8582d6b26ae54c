package caddyfile

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmtap/llmtap/modules/llmtap"
)

// registerAPIDirective registers llmtap_api, the Connect API on a site route. It must end up
// before llmtap, so the API's own requests are not measured as inference traffic; Caddy only
// orders against standard directives, so it goes before invoke first and llmtap, registered
// after it the same way, lands between the two.
func registerAPIDirective() {
	httpcaddyfile.RegisterHandlerDirective("llmtap_api", parseAPIHandler)
	httpcaddyfile.RegisterDirectiveOrder("llmtap_api", httpcaddyfile.Before, "invoke")
}

func parseAPIHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var handler llmtap.APIHandler
	err := unmarshalAPIHandler(h.Dispenser, &handler)
	return &handler, err
}

// unmarshalAPIHandler sets up the Connect API handler:
//
//	llmtap_api {
//	    control    # allow shadow and recording control (default: read-only)
//	}
func unmarshalAPIHandler(d *caddyfile.Dispenser, h *llmtap.APIHandler) error {
	d.Next() // the directive name
	if err := head(d).end(); err != nil {
		return err
	}
	return options(d, "llmtap_api", true, "control", func(o *option) (err error) {
		if o.word != "control" {
			return errUnknown
		}
		h.Control, err = o.flag()
		return err
	})
}
