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
	for d.NextBlock(0) {
		switch o := opt(d, ""); o.name {
		case "control":
			var err error
			if h.Control, err = o.flag(); err != nil {
				return err
			}
		default:
			return d.Errf("unknown llmtap_api option %q; expected control", o.name)
		}
	}
	return nil
}
