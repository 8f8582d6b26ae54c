package caddyfile

import (
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/telemetry/headroom"
)

// parsePassiveHeadroom reads the passive_headroom block of the llmtap directive
// (docs/headroom.md):
//
//	passive_headroom {
//	    ttft    <duration>   # the mean TTFT objective; required
//	    window  <duration>   # one time window, default 10s
//	    windows <n>          # windows kept, default 30
//	}
func parsePassiveHeadroom(d *caddyfile.Dispenser) (*headroom.Config, error) {
	if err := head(d).end(); err != nil {
		return nil, err
	}
	c := &headroom.Config{}
	err := options(d, "passive_headroom", false, "ttft, window or windows", func(o *option) (err error) {
		switch o.word {
		case "ttft", "window":
			v, err := one(o, duration)
			if err != nil {
				return err
			}
			if o.word == "ttft" {
				c.TTFTMs = float64(v) / float64(time.Millisecond)
			} else {
				c.WindowSeconds = time.Duration(v).Seconds()
			}
		case "windows":
			c.Windows, err = one(o, integer(1, 1000, "windows"))
		default:
			err = errUnknown
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, d.Errf("%v", err)
	}
	return c, nil
}
