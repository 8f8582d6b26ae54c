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

// maxAPIStreams bounds max_streams: 8,000 streams cost a proxy 16,000 goroutines, 8,000
// descriptors and about 316 MB, and slowed its live requests sevenfold (issue 35).
const maxAPIStreams = 10000

func parseAPIHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var handler llmtap.APIHandler
	err := unmarshalAPIHandler(h.Dispenser, &handler)
	return &handler, err
}

// unmarshalAPIHandler sets up the Connect API handler:
//
//	llmtap_api {
//	    control         # allow shadow and recording control (default: read-only)
//	    max_streams <n> # timeline streams open at once, 1 to 10000 (default 64)
//	}
func unmarshalAPIHandler(d *caddyfile.Dispenser, h *llmtap.APIHandler) error {
	d.Next() // the directive name
	if err := head(d).end(); err != nil {
		return err
	}
	return options(d, "llmtap_api", true, "control or max_streams", func(o *option) (err error) {
		switch o.word {
		case "control":
			h.Control, err = o.flag()
		case "max_streams":
			h.MaxStreams, err = one(o, integer(1, maxAPIStreams, "streams"))
		default:
			return errUnknown
		}
		return err
	})
}
