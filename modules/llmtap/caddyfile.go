package llmtap

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"

	"github.com/llmtap/llmtap/telemetry/decode"
)

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	llmtap [<matcher>] {
//	    api               <openai.chat|openai.completions|unknown|…>
//	    max_event_size    <size>
//	    max_request_body  <size>
//	    max_response_body <size>
//	    inject_usage
//	    record            [<dir>] { … }   # see parseRecord in record.go
//	    mirror            <upstream> { … } # see parseMirror in mirror.go
//	    tenant            header <name> | placeholder <{placeholder}> | api_key
//	    server_timing
//	}
//
// Sizes accept units (64KiB, 1MiB, 1MB) or a plain number of bytes. inject_usage takes no
// value: present, it turns on usage injection for streaming chat completions (see
// Handler.InjectUsage). Every subdirective is optional; `llmtap` alone measures with the
// defaults.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume the directive name
	if d.NextArg() {
		return d.Errf("llmtap takes no arguments on its line (got %q); put options in a block", d.Val())
	}
	for d.NextBlock(0) {
		switch opt := d.Val(); opt {
		case "api":
			if !d.NextArg() {
				return d.Errf("api needs one value, one of %v", decode.APIs())
			}
			h.API = d.Val()
			if !decode.Known(h.API) {
				return d.Errf("api %q is not a known API; expected one of %v", h.API, decode.APIs())
			}
			if d.NextArg() {
				return d.Errf("api takes one value, got another: %q", d.Val())
			}
		case "max_event_size":
			n, err := parseSize(d, opt)
			if err != nil {
				return err
			}
			h.MaxEventSize = n
		case "max_request_body":
			n, err := parseSize(d, opt)
			if err != nil {
				return err
			}
			h.MaxRequestBody = n
		case "max_response_body":
			n, err := parseSize(d, opt)
			if err != nil {
				return err
			}
			h.MaxResponseBody = n
		case "inject_usage":
			if d.NextArg() {
				return d.Errf("inject_usage takes no value, got %q", d.Val())
			}
			h.InjectUsage = true
		case "record":
			rc, err := parseRecord(d)
			if err != nil {
				return err
			}
			h.Record = rc
		case "mirror":
			mc, err := parseMirror(d)
			if err != nil {
				return err
			}
			h.Mirror = mc
		case "server_timing":
			if d.NextArg() {
				return d.Errf("server_timing takes no value, got %q", d.Val())
			}
			h.ServerTiming = true
		case "tenant":
			tc, err := parseTenant(d) // tenant.go
			if err != nil {
				return err
			}
			h.Tenant = tc
		default:
			return d.Errf("unknown llmtap option %q; expected api, max_event_size, max_request_body, max_response_body, inject_usage, record, mirror, tenant or server_timing", opt)
		}
	}
	return nil
}

// parseSize reads one size argument for option opt: a positive number of bytes, with an
// optional unit.
func parseSize(d *caddyfile.Dispenser, opt string) (int, error) {
	if !d.NextArg() {
		return 0, d.Errf("%s needs a size, such as 1MiB or 65536", opt)
	}
	val := d.Val()
	if d.NextArg() {
		return 0, d.Errf("%s takes one size, got another: %q", opt, d.Val())
	}
	n, err := humanize.ParseBytes(val)
	if err != nil {
		return 0, d.Errf("%s: %q is not a size; expected a number of bytes with an optional unit, such as 1MiB or 65536", opt, val)
	}
	if n == 0 || n > 1<<31 {
		return 0, d.Errf("%s must be between 1 byte and 2GiB, got %s", opt, strconv.Quote(val))
	}
	return int(n), nil
}

var _ caddyfile.Unmarshaler = (*Handler)(nil)
