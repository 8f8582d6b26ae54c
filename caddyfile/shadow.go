package caddyfile

import (
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/stats"

	"github.com/llmtap/llmtap/internal/limits"
)

// count is a non-negative integer option of a shadow load (0: the default).
var count = integer(0, maxInt, "")

// span is a duration option of a shadow load, read as duration is.
var span = kind[workload.Duration]{noun: duration.noun, read: func(s string) (workload.Duration, string) {
	d, why := duration.read(s)
	return workload.Duration(d), why
}}

// parseShadow reads one shadow subdirective (the dispenser is on its name):
//
//	shadow <name> {
//	    url           <url of a live route through this proxy>
//	    model         <model>
//	    endpoint_type chat|completions|messages|ollama_chat
//	    rate          <requests/s>
//	    arrival       poisson|gamma|constant
//	    smoothness    <gamma shape k>
//	    isl <tokens>  isl_stddev <tokens>  osl <tokens>  osl_stddev <tokens>
//	    extra         <key:value>...
//	    streaming     on|off
//	    header        <name> <value>
//	    seed          <n>
//	    entries       <n>
//	    start_after   <duration>
//	    duration      <duration>
//	    window        <HH:MM-HH:MM UTC>
//	    max_in_flight <n>
//	    max_rate      <requests/s>
//	    stopped
//	    trace <file> { … }   # see parseShadowTrace
//	    headroom { … }       # see parseShadowHeadroom
//	}
//
// Numbers are non-negative (0 keeps the default); the built config is checked as a whole when
// it is provisioned.
func parseShadow(a *llmtap.App, d *caddyfile.Dispenser) error {
	sc := &llmtap.ShadowConfig{}
	var err error
	if sc.Name, err = one(head(d), text("a name: shadow <name> { … }")); err != nil {
		return err
	}
	a.Shadows = append(a.Shadows, sc)
	return options(d, "shadow", false, "url, model, endpoint_type, rate, arrival, smoothness, isl, isl_stddev, osl, osl_stddev, extra, streaming, header, seed, entries, start_after, duration, window, max_in_flight, max_rate, share, stopped, trace or headroom", func(o *option) (err error) {
		switch o.word {
		case "url":
			sc.URL, err = one(o, text(""))
		case "model":
			sc.Model, err = one(o, text(""))
		case "endpoint_type":
			sc.EndpointType, err = one(o, oneOf(workload.EndpointTypes...))
		case "arrival":
			sc.Arrival, err = one(o, oneOf(gen.PatternPoisson, gen.PatternGamma, gen.PatternConstant))
		case "window":
			if sc.Window, err = one(o, text("a window, such as 22:00-06:00")); err == nil {
				if _, werr := gen.ParseWindow(sc.Window); werr != nil {
					err = d.Errf("%v", werr)
				}
			}
		case "rate":
			sc.Rate, err = one(o, nonNegative)
		case "smoothness":
			sc.Smoothness, err = one(o, nonNegative)
		case "isl":
			sc.ISL, err = one(o, tokenLength)
		case "isl_stddev":
			sc.ISLStddev, err = one(o, tokenLength)
		case "osl":
			sc.OSL, err = one(o, tokenLength)
		case "osl_stddev":
			sc.OSLStddev, err = one(o, tokenLength)
		case "max_rate":
			sc.MaxRate, err = one(o, nonNegative)
		case "share":
			sc.Share, err = one(o, integer(1, 10000, "instances"))
		case "max_in_flight":
			sc.MaxInFlight, err = one(o, count)
		case "entries":
			sc.Entries, err = one(o, integer(0, limits.MaxEntries, "entries"))
		case "seed":
			sc.Seed, err = one(o, seed)
		case "start_after":
			sc.StartAfter, err = one(o, span)
		case "duration":
			sc.Duration, err = one(o, span)
		case "extra":
			var extra []string
			if extra, err = some(o, text("a key:value pair")); err == nil {
				for _, x := range extra {
					if _, perr := workload.ParseExtra(x); perr != nil {
						return d.Errf("%s %q: %v", o.name, x, perr)
					}
				}
				sc.Extra = append(sc.Extra, extra...)
			}
		case "streaming":
			var on bool
			if on, err = one(o, onOff); err == nil {
				sc.Streaming = &on
			}
		case "header":
			err = shadowHeader(o, sc)
		case "stopped":
			sc.Stopped, err = o.flag()
		case "trace":
			err = parseShadowTrace(sc, d)
		case "headroom":
			err = parseShadowHeadroom(sc, d)
		default:
			err = errUnknown
		}
		return err
	})
}

// shadowHeader reads header <name> <value>, a header set on every request of the load.
func shadowHeader(o *option, sc *llmtap.ShadowConfig) error {
	name, err := next(o, text("a header name and a value"))
	if err != nil {
		return err
	}
	value, err := next(o, text("a header name and a value"))
	if err != nil {
		return err
	}
	if err := o.end(); err != nil {
		return err
	}
	if sc.Headers == nil {
		sc.Headers = map[string]string{}
	}
	sc.Headers[name] = value
	return nil
}

// parseShadowTrace reads the trace block of a shadow load:
//
//	trace <file> {
//	    speedup      <x>
//	    format       auto|mooncake|records|payloads|azure|burstgpt
//	    max_requests <n>
//	}
func parseShadowTrace(sc *llmtap.ShadowConfig, d *caddyfile.Dispenser) error {
	t := &workload.TraceSpec{}
	var err error
	if t.File, err = one(head(d), text("a file: trace <file> { speedup <x> }")); err != nil {
		return err
	}
	sc.Trace = t
	return options(d, "trace", false, "speedup, format or max_requests", func(o *option) (err error) {
		switch o.word {
		case "speedup":
			t.Speedup, err = one(o, nonNegative)
		case "format":
			t.Format, err = one(o, text(""))
		case "max_requests":
			t.MaxRequests, err = one(o, integer(0, maxInt, "requests"))
		default:
			err = errUnknown
		}
		return err
	})
}

// parseShadowHeadroom reads the headroom block of a shadow load:
//
//	headroom {
//	    start <requests/s>  step <requests/s>  max <requests/s>
//	    step_duration <duration>
//	    slo           <metric:value>...
//	    attainment    <fraction>
//	    min_live      <n>
//	}
func parseShadowHeadroom(sc *llmtap.ShadowConfig, d *caddyfile.Dispenser) error {
	hr := &workload.HeadroomSpec{}
	if err := head(d).end(); err != nil {
		return err
	}
	sc.Headroom = hr
	return options(d, "headroom", false, "start, step, max, step_duration, slo, attainment or min_live", func(o *option) (err error) {
		switch o.word {
		case "start":
			hr.Start, err = one(o, nonNegative)
		case "step":
			hr.Step, err = one(o, nonNegative)
		case "max":
			hr.Max, err = one(o, nonNegative)
		case "attainment":
			hr.Attainment, err = one(o, fraction(false))
		case "min_live":
			hr.MinLive, err = one(o, count)
		case "step_duration":
			hr.StepDuration, err = one(o, span)
		case "slo":
			hr.SLO, err = sloList(o)
		default:
			err = errUnknown
		}
		return err
	})
}

// sloList reads slo <metric:value>..., objectives in AIPerf's --goodput syntax (a headroom
// probe's, which a rate step must meet; a canary verdict's, which judge the pairs), checked
// by stats.ParseSLOs, and returns them joined by spaces.
func sloList(o *option) (string, error) {
	slos, err := some(o, text("a metric:value pair, such as time_to_first_token:500"))
	if err != nil {
		return "", err
	}
	joined := strings.Join(slos, " ")
	if _, err := stats.ParseSLOs(joined); err != nil {
		return "", o.d.Errf("slo: %v", err)
	}
	return joined, nil
}
