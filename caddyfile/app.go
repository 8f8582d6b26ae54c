package caddyfile

import (
	"maps"
	"slices"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/price"
)

// appParsers read the subdirectives of the llmtap global option, one per feature.
var appParsers = map[string]func(*llmtap.App, *caddyfile.Dispenser) error{
	"gpu": parseGPU, "guard": parseGuard, "list_price": parseListPrice, "scrape": parseScrape, "shadow": parseShadow,
	"timeline": parseTimeline,
}

// unmarshalApp sets up the llmtap app from the Caddyfile global option:
//
//	llmtap {
//	    <subdirective> …
//	}
//
// Each subdirective belongs to one feature (gpu, guard, list_price, scrape, shadow, timeline).
func unmarshalApp(d *caddyfile.Dispenser, a *llmtap.App) error {
	d.Next() // the option name
	if err := head(d).end(); err != nil {
		return err
	}
	for d.NextBlock(0) {
		parse, ok := appParsers[d.Val()]
		if !ok {
			return d.Errf("unknown llmtap global subdirective %q; expected one of %v", d.Val(), slices.Sorted(maps.Keys(appParsers)))
		}
		if err := parse(a, d); err != nil {
			return err
		}
	}
	return nil
}

// parseGPU reads the gpu subdirective (the dispenser is on its name):
//
//	gpu [off] {
//	    interval           <duration>
//	    price_per_gpu_hour <price>
//	    off
//	}
func parseGPU(a *llmtap.App, d *caddyfile.Dispenser) error {
	if a.GPU == nil {
		a.GPU = new(llmtap.GPUConfig)
	}
	off, err := head(d).keyword("off")
	if err != nil {
		return err
	}
	a.GPU.Off = a.GPU.Off || off
	return options(d, "gpu", false, "interval, price_per_gpu_hour or off", func(o *option) (err error) {
		switch o.word {
		case "interval":
			a.GPU.Interval, err = one(o, duration)
		case "price_per_gpu_hour":
			if a.GPU.PricePerGPUHour, err = one(o, money); err == nil && a.GPU.PricePerGPUHour == 0 {
				err = o.d.Errf("gpu price_per_gpu_hour: %q is not a positive amount, such as 2.50", o.d.Val())
			}
		case "off":
			a.GPU.Off, err = o.flag()
		default:
			err = errUnknown
		}
		return err
	})
}

// parseListPrice reads one list_price subdirective (the dispenser is on its name), the prices
// per million tokens of the models name matches (a name, or a pattern in path.Match syntax):
//
//	list_price <name> {
//	    input        <price>
//	    output       <price>
//	    cached_input <price>
//	    cache_write  <price>
//	}
func parseListPrice(a *llmtap.App, d *caddyfile.Dispenser) error {
	name, err := one(head(d), text("a model name or pattern, such as gpt-4o or meta-llama/*"))
	if err != nil {
		return err
	}
	l := price.List{Model: name}
	if err := l.Check(); err != nil {
		return d.Errf("list_price %s: %v", name, err)
	}
	for _, p := range a.ListPrices {
		if p.Model == name {
			return d.Errf("list_price %s is given twice", name)
		}
	}
	missing := d.Errf("list_price %s needs both input and output prices per million tokens", name)
	var in, out bool
	err = options(d, "list_price", false, "input, output, cached_input or cache_write", func(o *option) (err error) {
		var dst *float64
		switch o.word {
		case "input":
			dst, in = &l.Input, true
		case "output":
			dst, out = &l.Output, true
		case "cached_input":
			l.CachedInput = new(float64)
			dst = l.CachedInput
		case "cache_write":
			l.CacheWrite = new(float64)
			dst = l.CacheWrite
		default:
			return errUnknown
		}
		*dst, err = one(o, money)
		return err
	})
	if err == nil && !(in && out) {
		err = missing
	}
	a.ListPrices = append(a.ListPrices, l)
	return err
}

// parseScrape reads one scrape subdirective (the dispenser is on its name):
//
//	scrape <url> {
//	    kind     vllm|sglang|tgi|dcgm
//	    interval <duration>
//	}
func parseScrape(a *llmtap.App, d *caddyfile.Dispenser) error {
	url, err := one(head(d), text("the URL of a metrics page, such as http://127.0.0.1:8000/metrics"))
	if err != nil {
		return err
	}
	a.Scrape = append(a.Scrape, llmtap.ScrapeConfig{URL: url})
	c := &a.Scrape[len(a.Scrape)-1]
	if err := c.CheckURL(); err != nil {
		return d.Errf("scrape: %v", err)
	}
	return options(d, "scrape", false, "kind or interval", func(o *option) (err error) {
		switch o.word {
		case "kind":
			if c.Kind, err = one(o, text("one of vllm, sglang, tgi or dcgm")); err == nil {
				if cerr := c.CheckKind(); cerr != nil {
					err = d.Errf("scrape: %v", cerr)
				}
			}
		case "interval":
			c.Interval, err = one(o, duration)
		default:
			err = errUnknown
		}
		return err
	})
}

// parseTimeline reads the timeline subdirective (the dispenser is on its name):
//
//	timeline [off] {
//	    window <duration>
//	    keep   <duration>
//	    settle <duration>
//	    off
//	}
func parseTimeline(a *llmtap.App, d *caddyfile.Dispenser) error {
	if a.Timeline == nil {
		a.Timeline = new(llmtap.TimelineConfig)
	}
	c := a.Timeline
	off, err := head(d).keyword("off")
	if err != nil {
		return err
	}
	c.Off = c.Off || off
	return options(d, "timeline", false, "window, keep, settle or off", func(o *option) (err error) {
		switch o.word {
		case "window":
			c.Window, err = one(o, duration)
		case "keep":
			c.Keep, err = one(o, duration)
		case "settle":
			c.Settle, err = one(o, duration)
		case "off":
			c.Off, err = o.flag()
		default:
			err = errUnknown
		}
		return err
	})
}

// parseGuard reads the guard subdirective (the dispenser is on its name):
//
//	guard {
//	    window       <duration>
//	    ttft_p99     <duration>
//	    error_rate   <fraction|percent>
//	    min_requests <n>
//	    statuses     <status>...|off
//	    cooldown     <duration>
//	}
func parseGuard(a *llmtap.App, d *caddyfile.Dispenser) error {
	if a.Guard != nil {
		return d.Err("guard is given twice")
	}
	c := &llmtap.GuardConfig{}
	if err := head(d).end(); err != nil {
		return err
	}
	a.Guard = c
	return options(d, "guard", false, "window, ttft_p99, error_rate, min_requests, statuses or cooldown", func(o *option) (err error) {
		switch o.word {
		case "window":
			c.Window, err = one(o, duration)
		case "ttft_p99":
			c.TTFTP99, err = one(o, duration)
		case "cooldown":
			c.Cooldown, err = one(o, duration)
		case "error_rate":
			c.ErrorRate, err = one(o, fraction(false))
		case "min_requests":
			c.MinRequests, err = one(o, integer(0, maxInt, "requests"))
		case "statuses":
			if o.accept("off") {
				c.StatusesOff, err = true, o.end()
				break
			}
			var statuses []int
			statuses, err = some(o, httpStatus)
			c.Statuses = append(c.Statuses, statuses...)
		default:
			err = errUnknown
		}
		return err
	})
}
