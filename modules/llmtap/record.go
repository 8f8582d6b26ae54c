package llmtap

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/internal/sensitive"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// RecordConfig turns on recording: the requests the handler measures are written to files in
// one folder, off the request path, for replay and offline analysis (see telemetry/recorder for
// the formats). Writing never delays a request: the recorder's queue is bounded and what does
// not fit is dropped and counted (llmtap_recorder_dropped_total, recorder_dropped in
// /llmtap/summary), as are records whose writing failed (a full disk: the writer then backs
// off before it opens a new file, and the proxy goes on serving).
//
// Across a reload, a record goes to the recorder of the config that measured it: a config's
// recorder lives until the last stream of that config has ended, at most 5 minutes after the
// config was unloaded (a stream still running then loses its record, counted with reason
// drain_timeout).
//
// Authorization, API-key and cookie headers are never written: the recorder sees no headers but
// the one named by session_header, which may not be one of those.
type RecordConfig struct {
	// Dir is the folder the files go to. It is created with mode 0700 when missing; files are
	// created 0600 and named <kind>-<UTC start time>.jsonl. Required.
	Dir string `json:"dir"`

	// Files chooses what is written: "records" (the per-request records, as GET
	// /llmtap/requests serves them), "trace" (AIPerf/Mooncake mooncake_trace JSONL with
	// prefix hash ids) and "payloads" (the request bodies, opt-in because they hold prompts).
	// Default: records and trace.
	Files []string `json:"files,omitempty"`

	// MaxPayload is the largest request body, in bytes, written to the payload file; larger
	// bodies are left out (and counted). A body is also left out when it was longer than the
	// handler's max_request_body, since only its start was captured. Default: 1 MiB.
	MaxPayload int `json:"max_payload,omitempty"`

	// RedactFields are top-level request body fields removed from payloads ("user",
	// "metadata", "api_key"). Default: none.
	RedactFields []string `json:"redact_fields,omitempty"`

	// RedactText replaces the text of messages and prompts in payloads by placeholders of
	// the same length ("xxxxx xxxx"), keeping roles, types and every other field, so a
	// replay keeps the request's shape and roughly its token counts. Default: off.
	RedactText bool `json:"redact_text,omitempty"`

	// SessionHeader names a request header whose value groups a conversation's turns; it is
	// written as session_id in records and the trace (cut to 256 bytes). Authorization,
	// cookie and key or token headers are refused. AIPerf replays rows of one session as
	// turns appended to each other, so leave it unset when the prompts already carry the
	// whole conversation (chat clients usually send it). Default: none.
	SessionHeader string `json:"session_header,omitempty"`

	// Sample is the fraction of requests recorded, in (0, 1]. The choice is a hash of the
	// request id and SampleSeed, so it is reproducible. Default: 1 (every request).
	Sample float64 `json:"sample,omitempty"`

	// SampleSeed changes which requests a sample keeps. Default: 0.
	SampleSeed uint64 `json:"sample_seed,omitempty"`

	// Routes, when set, records only requests whose path starts with one of these prefixes.
	Routes []string `json:"routes,omitempty"`

	// Models, when set, records only requests whose model matches one of these names or
	// patterns ("llama-*", path.Match syntax).
	Models []string `json:"models,omitempty"`

	// RotateSize starts a new file once the current one would grow past this many bytes.
	// Default: 256 MiB.
	RotateSize int64 `json:"rotate_size,omitempty"`

	// RotateAge starts a new file once the current one is this old. Default: 1h.
	RotateAge caddy.Duration `json:"rotate_age,omitempty"`

	// FlushInterval is the longest a written line waits in memory before it reaches the
	// operating system; a crash of the process loses at most this much. Files are also
	// flushed and synced on shutdown and when a reload changes the recording. Default: 1s.
	FlushInterval caddy.Duration `json:"flush_interval,omitempty"`

	// Queue is how many measured requests may wait for the file writer before new ones are
	// dropped (and counted). Default: 4096.
	Queue int `json:"queue,omitempty"`
}

// FleetKeyEnv names the environment variable that gives the key of the trace's prefix block
// ids (recorder.Options.FleetKey): at least 16 bytes, in hex or base64. Instances given the same
// key write the same hash_ids for the same prompt prefix, so their traces merge (llmtap trace
// merge) with prefix sharing intact. Unset, a random key is drawn once per process: ids agree
// across the rotations and reloads of one process, not between instances. A value that does not
// parse fails the provisioning of every handler that records.
const FleetKeyEnv = "LLMTAP_FLEET_KEY"

// fleetKey reads FleetKeyEnv; nil when unset.
func fleetKey() ([]byte, error) {
	v := strings.TrimSpace(os.Getenv(FleetKeyEnv))
	if v == "" {
		return nil, nil
	}
	k, err := keyparse.Parse(v, recorder.MinFleetKey, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FleetKeyEnv, err)
	}
	return k, nil
}

// sensitiveHeader reports whether a header may carry credentials, which are never recorded.
func sensitiveHeader(name string) bool { return sensitive.Header(name) }

// options turns the config into recorder options, checking everything at once.
func (c *RecordConfig) options() (recorder.Options, error) {
	var errs []error
	dir := c.Dir
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("record dir %q: %v", dir, err))
		}
		dir = abs
	}
	o := recorder.Options{
		Dir:          dir,
		MaxBodyBytes: c.MaxPayload,
		Redact:       recorder.Redact{Fields: c.RedactFields, Text: c.RedactText},
		Sample:       c.Sample,
		Seed:         c.SampleSeed,
		Routes:       c.Routes,
		Models:       c.Models,
		RotateBytes:  c.RotateSize,
		RotateAge:    time.Duration(c.RotateAge),
		FlushEvery:   time.Duration(c.FlushInterval),
		Queue:        c.Queue,
	}
	if key, err := fleetKey(); err != nil {
		errs = append(errs, fmt.Errorf("record: %w", err))
	} else {
		o.FleetKey = key
	}
	files := c.Files
	if len(files) == 0 {
		files = []string{recorder.KindRecords, recorder.KindTrace}
	}
	for _, f := range files {
		switch f {
		case recorder.KindRecords:
			o.Records = true
		case recorder.KindTrace:
			o.Trace = true
		case recorder.KindPayloads:
			o.Payloads = true
		default:
			errs = append(errs, fmt.Errorf("record files: %q is not a kind of file; expected records, trace or payloads", f))
		}
	}
	if c.SessionHeader != "" && sensitiveHeader(c.SessionHeader) {
		errs = append(errs, fmt.Errorf("record session_header %q may carry credentials, which are never recorded; name a header that only identifies the conversation", c.SessionHeader))
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("record: %w", err))
	}
	return o, errors.Join(errs...)
}

// recording is a handler's hold on its recorder.
type recording struct {
	entry         *recorderEntry
	sessionHeader string
	// released makes releasing idempotent without touching Handler.recording, which requests
	// still being served by the old config read.
	released atomic.Bool
}

// provisionRecording takes a hold on the recorder of the handler's folder and options, when
// the handler records.
func (h *Handler) provisionRecording() error {
	if h.Record == nil {
		return nil
	}
	opts, err := h.Record.options()
	if err != nil {
		return err
	}
	e, err := acquireRecorder(opts)
	if err != nil {
		return fmt.Errorf("starting the recorder in %s: %w", opts.Dir, err)
	}
	h.recording = &recording{entry: e, sessionHeader: h.Record.SessionHeader}
	if opts.Trace && opts.FleetKey == nil {
		if !proc.keylessLogged.Swap(true) { // once per process
			h.logger.Info("recording traces without "+FleetKeyEnv+": prefix hash_ids agree within this process only, so traces of several instances merge without prefix sharing; give every instance the same key (16 bytes or more, hex or base64) to merge them",
				zap.String("dir", opts.Dir))
		}
	}
	return nil
}

// releaseRecording drops the handler's hold; the recorder stops when no config uses it.
func (h *Handler) releaseRecording() {
	if rc := h.recording; rc != nil && rc.released.CompareAndSwap(false, true) {
		releaseRecorder(rc.entry)
	}
}

// maxSessionID bounds the session id taken from a header.
const maxSessionID = 256

// tag marks rec for the handler's recorder and takes the session id. It is nil-safe.
func (rc *recording) tag(r *http.Request, rec *record.Record) {
	if rc == nil {
		return
	}
	rec.RecordTo = rc.entry.key
	if rc.sessionHeader != "" {
		v := r.Header.Get(rc.sessionHeader)
		if len(v) > maxSessionID {
			v = v[:maxSessionID]
		}
		rec.SessionID = v
	}
}

// parseRecord reads a record block (the directive name is the current token):
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
//	}
func parseRecord(d *caddyfile.Dispenser) (*RecordConfig, error) {
	c := new(RecordConfig)
	if d.NextArg() {
		c.Dir = d.Val()
		if d.NextArg() {
			return nil, d.Errf("record takes at most one argument, the folder; got another: %q", d.Val())
		}
	}
	payloads := false
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		opt := d.Val()
		args := d.RemainingArgs()
		one := func() (string, error) {
			if len(args) != 1 {
				return "", d.Errf("record %s takes one value, got %d", opt, len(args))
			}
			return args[0], nil
		}
		some := func() ([]string, error) {
			if len(args) == 0 {
				return nil, d.Errf("record %s needs at least one value", opt)
			}
			return args, nil
		}
		none := func() error {
			if len(args) != 0 {
				return d.Errf("record %s takes no value, got %q", opt, args[0])
			}
			return nil
		}
		var err error
		switch opt {
		case "dir":
			c.Dir, err = one()
		case "files":
			if c.Files, err = some(); err == nil {
				for _, f := range c.Files {
					if f != recorder.KindRecords && f != recorder.KindTrace && f != recorder.KindPayloads {
						return nil, d.Errf("record files: %q is not a kind of file; expected records, trace or payloads", f)
					}
				}
			}
		case "payloads":
			err, payloads = none(), true
		case "max_payload":
			var n int64
			n, err = recordSize(d, opt, args)
			c.MaxPayload = int(min(n, 1<<31))
		case "redact_fields":
			c.RedactFields, err = some()
		case "redact_text":
			err, c.RedactText = none(), true
		case "session_header":
			c.SessionHeader, err = one()
		case "sample":
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("record sample takes a fraction (0.1 or 10%%) and optionally a seed")
			}
			if c.Sample, err = parseFraction(args[0]); err != nil {
				return nil, d.Errf("record sample: %v", err)
			}
			if len(args) == 2 {
				if c.SampleSeed, err = strconv.ParseUint(args[1], 10, 64); err != nil {
					return nil, d.Errf("record sample seed %q is not a non-negative integer", args[1])
				}
			}
		case "routes":
			c.Routes, err = some()
		case "models":
			c.Models, err = some()
		case "rotate_size":
			c.RotateSize, err = recordSize(d, opt, args)
		case "rotate_age", "flush_interval":
			var v string
			if v, err = one(); err == nil {
				var dur time.Duration
				if dur, err = caddy.ParseDuration(v); err != nil || dur <= 0 {
					return nil, d.Errf("record %s: %q is not a positive duration, such as 1s or 1h", opt, v)
				}
				if opt == "rotate_age" {
					c.RotateAge = caddy.Duration(dur)
				} else {
					c.FlushInterval = caddy.Duration(dur)
				}
			}
		case "queue":
			var v string
			if v, err = one(); err == nil {
				if c.Queue, err = strconv.Atoi(v); err != nil || c.Queue < 1 {
					return nil, d.Errf("record queue: %q is not a positive number of records", v)
				}
			}
		default:
			return nil, d.Errf("unknown record option %q; expected dir, files, payloads, max_payload, redact_fields, redact_text, session_header, sample, routes, models, rotate_size, rotate_age, flush_interval or queue", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if payloads {
		if len(c.Files) == 0 {
			c.Files = []string{recorder.KindRecords, recorder.KindTrace}
		}
		c.Files = append(c.Files, recorder.KindPayloads)
	}
	if c.Dir == "" {
		return nil, d.Err("record needs a folder: record <dir> or dir <dir> in its block")
	}
	if _, err := c.options(); err != nil {
		return nil, d.Errf("%v", err)
	}
	return c, nil
}

// recordSize reads one size argument of a record option.
func recordSize(d *caddyfile.Dispenser, opt string, args []string) (int64, error) {
	if len(args) != 1 {
		return 0, d.Errf("record %s takes one size, such as 1MiB", opt)
	}
	n, err := humanize.ParseBytes(args[0])
	if err != nil || n == 0 || n > 1<<62 {
		return 0, d.Errf("record %s: %q is not a positive size; expected a number of bytes with an optional unit, such as 1MiB", opt, args[0])
	}
	return int64(n), nil
}

// parseFraction reads "0.1" or "10%".
func parseFraction(s string) (float64, error) {
	v, pct := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && pct {
		f /= 100
	}
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("%q is not a fraction in (0, 1] (0.1 or 10%%)", s)
	}
	return f, nil
}
