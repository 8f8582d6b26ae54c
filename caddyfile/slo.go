package caddyfile

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// parseSLO reads one slo block of the llmtap directive (the option name is the current token)
// and appends it to the handler's SLOs (docs/slo.md):
//
//	slo [<name>] {
//	    models  <name|pattern>...   # default: every model
//	    tenants <name|pattern>...   # default: every tenant
//	    ttft    <duration>          # time to first token
//	    itl     <duration>          # inter-token latency
//	    latency <duration>          # request latency
//	    target  <fraction|percent>  # attainment objective, default 99%
//	}
//
// The block may be repeated; a request is counted against the first SLO that selects its
// model and tenant. At least one of ttft, itl and latency is needed.
func parseSLO(d *caddyfile.Dispenser, h *llmtap.Handler) error {
	hd := head(d)
	name, _, err := maybe(hd, text("a name"))
	if err == nil {
		err = hd.end()
	}
	if err != nil {
		return err
	}
	o := slo.Objective{Name: name}
	ms := func(dur time.Duration) float64 { return float64(dur) / float64(time.Millisecond) }
	err = options(d, "slo", false, "models, tenants, ttft, itl, latency or target", func(op *option) (err error) {
		switch op.word {
		case "models":
			o.Models, err = some(op, text("a model name or pattern"))
		case "tenants":
			o.Tenants, err = some(op, text("a tenant name or pattern"))
		case "ttft", "itl", "latency":
			v, err := one(op, duration)
			if err != nil {
				return err
			}
			switch op.word {
			case "ttft":
				o.TTFTMs = ms(time.Duration(v))
			case "itl":
				o.ITLMs = ms(time.Duration(v))
			default:
				o.LatencyMs = ms(time.Duration(v))
			}
		case "target":
			if o.Target, err = one(op, fraction(true)); err == nil && o.Target == 1 {
				err = d.Errf("slo target: %q is not a fraction in (0, 1): a target of 100%% leaves no error budget", d.Val())
			}
		default:
			err = errUnknown
		}
		return err
	})
	if err != nil {
		return err
	}
	h.SLO = append(h.SLO, o)
	if err := slo.Validate(h.SLO); err != nil {
		return d.Errf("%v", err)
	}
	return nil
}
