// Package caddyfile is llmtap's Caddyfile surface: it registers the llmtap directive and orders
// it before handle, route and reverse_proxy (after encode), so users never need an `order`
// line, registers the llmtap global option and the llmtap_api directive, and holds every parser
// of their options (the module package knows nothing of the Caddyfile). The parsers read values
// with one toolkit (args.go), so a kind of value is refused with the same words everywhere.
// Its tests adapt every Caddyfile under testdata/ and compare the JSON with golden files.
package caddyfile

import (
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/llmtap/llmtap/modules/llmtap"
)

func init() {
	registerAPIDirective() // llmtap_api, which must come before llmtap (api.go)
	httpcaddyfile.RegisterHandlerDirective("llmtap", parseHandler)
	// Before invoke, handle, handle_path and route, so that a top-level llmtap wraps the
	// requests those blocks answer (ordered after them, it never ran for them), and so before
	// reverse_proxy, whose writer it wraps; after encode, push, intercept and templates (which
	// come earlier in Caddy's order), so llmtap sees the upstream's uncompressed bytes.
	httpcaddyfile.RegisterDirectiveOrder("llmtap", httpcaddyfile.Before, "invoke")
	// The global option configures the llmtap app (GPU sampling, scrapes, timeline, shadow load).
	httpcaddyfile.RegisterGlobalOption("llmtap", parseApp)
}

func parseApp(d *caddyfile.Dispenser, _ any) (any, error) {
	var app llmtap.App
	if err := unmarshalApp(d, &app); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "llmtap", Value: caddyconfig.JSON(app, nil)}, nil
}

func parseHandler(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var handler llmtap.Handler
	err := unmarshalHandler(h.Dispenser, &handler)
	return &handler, err
}
