package caddyfile

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/recorder"
	"github.com/llmtap/llmtap/telemetry/tenant"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// handlerSize is a size option of the handler (max_event_size, max_request_body,
// max_response_body, mirror max_body): 1 byte to 2GiB.
var handlerSize = size(1, 1<<31)

// recordSize is a size option of record (max_payload, rotate_size): 1 byte to 4EiB.
var recordSize = size(1, 1<<62)

// tokenizerFile is the path of a tokenizer file that loads (tokens.Load).
var tokenizerFile = kind[string]{noun: "the path of a tokenizer.json file", read: func(s string) (string, string) {
	if _, err := tokens.Load(s); err != nil {
		return "", fmt.Sprintf(": %q does not load: %v", s, err)
	}
	return s, ""
}}

// toInt is a size read as an int (the handler's sizes are at most 2GiB).
func toInt(n int64, err error) (int, error) { return int(n), err }

// unmarshalHandler sets up the llmtap handler from the tokens of its directive:
//
//	llmtap [<matcher>] {
//	    api               <openai.chat|openai.completions|unknown|…>
//	    max_event_size    <size>
//	    max_request_body  <size>
//	    max_response_body <size>
//	    tokenizer         <tokenizer.json>
//	    inject_usage
//	    record            [<dir>] { … }   # see parseRecord
//	    mirror            <upstream> { … } # see parseMirror
//	    tenant            header <name> | placeholder <{placeholder}> | api_key
//	    server_timing
//	    slo               [<name>] { … }   # see parseSLO; repeatable
//	    passive_headroom  { … }            # see parsePassiveHeadroom
//	}
//
// tokenizer names a Hugging Face tokenizer file, read here already so that a file that is
// missing or that llmtap cannot follow is refused at its line. Sizes accept units (64KiB,
// 1MiB, 1MB) or a plain number of bytes, from 1 byte to 2GiB.
// inject_usage takes no value: present, it turns on usage injection for streaming chat
// completions (see Handler.InjectUsage). Every subdirective is optional; `llmtap` alone
// measures with the defaults.
func unmarshalHandler(d *caddyfile.Dispenser, h *llmtap.Handler) error {
	d.Next() // the directive name
	if err := head(d).end(); err != nil {
		return err
	}
	return options(d, "llmtap", true, "api, max_event_size, max_request_body, max_response_body, tokenizer, inject_usage, record, mirror, tenant, server_timing, slo or passive_headroom", func(o *option) (err error) {
		switch o.word {
		case "api":
			h.API, err = one(o, oneOf(decode.APIs()...))
		case "max_event_size":
			h.MaxEventSize, err = toInt(one(o, handlerSize))
		case "max_request_body":
			h.MaxRequestBody, err = toInt(one(o, handlerSize))
		case "max_response_body":
			h.MaxResponseBody, err = toInt(one(o, handlerSize))
		case "tokenizer":
			h.Tokenizer, err = one(o, tokenizerFile)
		case "inject_usage":
			h.InjectUsage, err = o.flag()
		case "record":
			h.Record, err = parseRecord(d)
		case "mirror":
			h.Mirror, err = parseMirror(d)
		case "tenant":
			h.Tenant, err = parseTenant(o)
		case "server_timing":
			h.ServerTiming, err = o.flag()
		case "slo":
			err = parseSLO(d, h) // slo.go
		case "passive_headroom":
			h.PassiveHeadroom, err = parsePassiveHeadroom(d) // headroom.go
		default:
			err = errUnknown
		}
		return err
	})
}

// parseTenant reads tenant <source> [<name>]: header <name>, placeholder <{placeholder}> or
// api_key.
func parseTenant(o *option) (*llmtap.TenantConfig, error) {
	from, err := next(o, oneOf(tenant.SourceHeader, tenant.SourcePlaceholder, tenant.SourceAPIKey))
	if err != nil {
		return nil, err
	}
	c := &llmtap.TenantConfig{From: from}
	if c.Name, _, err = maybe(o, text("a header name or a placeholder")); err != nil {
		return nil, err
	}
	if err := o.end(); err != nil {
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, o.d.Errf("%v", err)
	}
	return c, nil
}

// parseRecord reads a record block (the option name is the current token):
//
//	record [<dir>] {
//	    dir            <folder>
//	    files          records|trace|payloads...   # default: records trace
//	    payloads                                   # adds payloads to files
//	    max_payload    <size>
//	    redact_fields  <field>...
//	    redact_text
//	    session_header <header>
//	    sample         <fraction|percent> [<seed>]
//	    routes         <path prefix>...
//	    models         <name|pattern>...
//	    rotate_size    <size>
//	    rotate_age     <duration>
//	    flush_interval <duration>
//	    queue          <records>
//	    format         jsonl|parquet
//	    rotate_rows    <rows>
//	    otlp_logs
//	}
func parseRecord(d *caddyfile.Dispenser) (*llmtap.RecordConfig, error) {
	c := new(llmtap.RecordConfig)
	h := head(d)
	dir, _, err := maybe(h, text("a folder"))
	if err == nil {
		err = h.end()
	}
	if err != nil {
		return nil, err
	}
	c.Dir = dir
	payloads := false
	err = options(d, "record", false, "dir, files, payloads, max_payload, redact_fields, redact_text, session_header, sample, routes, models, rotate_size, rotate_age, flush_interval, queue, format, rotate_rows or otlp_logs", func(o *option) (err error) {
		switch o.word {
		case "dir":
			c.Dir, err = one(o, text("a folder"))
		case "files":
			c.Files, err = some(o, oneOf(recfile.KindRecords, recfile.KindTrace, recfile.KindPayloads))
		case "payloads":
			payloads, err = o.flag()
		case "max_payload":
			var n int64
			n, err = one(o, recordSize)
			c.MaxPayload = int(min(n, 1<<31))
		case "redact_fields":
			c.RedactFields, err = some(o, text(""))
		case "redact_text":
			c.RedactText, err = o.flag()
		case "session_header":
			c.SessionHeader, err = one(o, text("a header name"))
		case "sample":
			c.Sample, c.SampleSeed, err = sample(o)
		case "routes":
			c.Routes, err = some(o, text(""))
		case "models":
			c.Models, err = some(o, text(""))
		case "rotate_size":
			c.RotateSize, err = one(o, recordSize)
		case "rotate_age":
			c.RotateAge, err = one(o, duration)
		case "flush_interval":
			c.FlushInterval, err = one(o, duration)
		case "queue":
			c.Queue, err = one(o, integer(1, maxInt, "records"))
		case "format":
			c.Format, err = one(o, oneOf(recorder.FormatJSONL, recorder.FormatParquet))
		case "rotate_rows":
			var n int
			n, err = one(o, integer(1, maxInt, "rows"))
			c.RotateRows = int64(n)
		case "otlp_logs":
			c.OTLPLogs, err = o.flag()
		default:
			err = errUnknown
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if payloads {
		if len(c.Files) == 0 {
			c.Files = []string{recfile.KindRecords, recfile.KindTrace}
		}
		c.Files = append(c.Files, recfile.KindPayloads)
	}
	if c.Dir == "" {
		return nil, d.Err("record needs a folder: record <dir> or dir <dir> in its block")
	}
	if err := c.Check(); err != nil {
		return nil, d.Errf("%v", err)
	}
	return c, nil
}

// parseMirror reads a mirror block (the option name is the current token):
//
//	mirror <upstream> {
//	    sample            <fraction|percent> [<seed>]   # default 0.1
//	    sample_header     <header>                      # default: a key no client steers
//	    trust_mirror_of                                 # honour any X-Llmtap-Mirror-Of
//	    max_body          <size>                        # default 1MiB
//	    max_in_flight     <n>                           # default 64
//	    timeout           <duration>                    # default 60s
//	    header_up         <name> [<value>]              # no value: remove the header
//	    forward_sensitive <header>...
//	}
func parseMirror(d *caddyfile.Dispenser) (*llmtap.MirrorConfig, error) {
	c := new(llmtap.MirrorConfig)
	var err error
	if c.Upstream, err = one(head(d), text("an upstream URL, such as mirror http://10.0.0.2:8000")); err != nil {
		return nil, err
	}
	if err := mirror.CheckUpstream(c.Upstream); err != nil {
		return nil, d.Errf("%v", err)
	}
	err = options(d, "mirror", false, "sample, sample_header, trust_mirror_of, max_body, max_in_flight, timeout, header_up, forward_sensitive or verdict", func(o *option) (err error) {
		switch o.word {
		case "sample":
			c.Sample, c.SampleSeed, err = sample(o)
		case "sample_header":
			c.SampleHeader, err = one(o, text("a header name"))
		case "trust_mirror_of":
			c.TrustMirrorOf, err = o.flag()
		case "max_body":
			c.MaxBody, err = toInt(one(o, handlerSize))
		case "max_in_flight":
			c.MaxInFlight, err = one(o, integer(1, maxInt, "requests"))
		case "timeout":
			c.Timeout, err = one(o, duration)
		case "header_up":
			err = headerUp(o, c)
		case "forward_sensitive":
			err = forwardSensitive(o, c)
		case "verdict":
			err = mirrorVerdict(d, c)
		default:
			err = errUnknown
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, d.Errf("mirror: %v", err)
	}
	return c, nil
}

// mirrorVerdict reads the canary verdict's block (docs/canary.md):
//
//	verdict {
//	    alpha        <fraction>   # bound on a false worse, and on a false not worse, over all looks
//	    margin       <fraction>   # typical ratios (TTFT, ITL, request latency, output tokens)
//	    tail_margin  <fraction>   # slow shares above the pooled p99 (1: twice as many)
//	    margin_ms    <ms>|off     # constant offset forgiven on TTFT and request latency
//	    error_margin <fraction>   # error rates' difference
//	    drift        <fraction>|off  # own drift of each upstream's speed allowed for (SD, log scale)
//	    drift_memory <pairs>      # that drift's memory
//	    first_look   <pairs>
//	    looks        <n>
//	    slo          <metric:value>...  # objectives judging both sides (default: the handler's slo)
//	}
func mirrorVerdict(d *caddyfile.Dispenser, c *llmtap.MirrorConfig) error {
	if err := head(d).end(); err != nil {
		return err
	}
	v := &mirror.VerdictOptions{}
	c.Verdict = v
	return options(d, "verdict", false, "alpha, margin, tail_margin, margin_ms, error_margin, drift, drift_memory, first_look, looks or slo", func(o *option) (err error) {
		switch o.word {
		case "alpha":
			v.Alpha, err = one(o, fraction(true))
		case "margin":
			v.Margin, err = one(o, fraction(true))
		case "tail_margin":
			v.TailMargin, err = one(o, fraction(true))
		case "error_margin":
			v.ErrorMargin, err = one(o, fraction(true))
		case "margin_ms":
			var off bool
			if off = o.accept("off"); off {
				v.MarginMs, err = -1, o.end()
			} else {
				v.MarginMs, err = one(o, nonNegative)
			}
		case "drift":
			if o.accept("off") {
				v.Drift, err = -1, o.end()
			} else {
				v.Drift, err = one(o, fraction(true))
			}
		case "drift_memory":
			v.DriftMemory, err = one(o, integer(1, mirror.MaxVerdictPairs, "pairs"))
		case "first_look":
			v.FirstLook, err = one(o, integer(1, 1<<20, "pairs"))
		case "looks":
			v.Looks, err = one(o, integer(1, 12, "looks"))
		case "slo":
			v.SLO, err = sloList(o)
		default:
			err = errUnknown
		}
		return err
	})
}

// headerUp reads mirror header_up <name> [<value>]: no value removes the header from the
// copies.
func headerUp(o *option, c *llmtap.MirrorConfig) error {
	name, err := next(o, text("a header name"))
	if err != nil {
		return err
	}
	if err := mirror.CheckHeaderUp(name); err != nil {
		return o.d.Errf("mirror %v", err)
	}
	value, _, _ := maybe(o, text(""))
	if err := o.end(); err != nil {
		return err
	}
	if c.HeaderUp == nil {
		c.HeaderUp = make(map[string]string)
	}
	c.HeaderUp[name] = value
	return nil
}

// forwardSensitive reads mirror forward_sensitive <header>..., credential headers the copies
// keep.
func forwardSensitive(o *option, c *llmtap.MirrorConfig) error {
	names, err := some(o, text("a header name, such as Authorization"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := mirror.CheckForwardSensitive(name); err != nil {
			return o.d.Errf("mirror %v", err)
		}
	}
	c.ForwardSensitive = append(c.ForwardSensitive, names...)
	return nil
}
