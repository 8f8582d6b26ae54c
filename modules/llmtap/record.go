package llmtap

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/format/recfile"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/internal/keyparse"
	"github.com/llmtap/llmtap/internal/process"
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
	// created 0600 and named <kind>-<UTC start time>.jsonl (.parquet, in hourly partitions, with
	// format parquet). Required.
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

	// SessionHeader names a request header whose value groups a conversation's turns
	// (llmtap replay and AIPerf send X-Correlation-Id); it is written as session_id (cut to
	// 256 bytes), and the trace and payload files add each later turn's think time (delay).
	// Authorization, cookie and key or token headers are refused. What a replay of the
	// sessions sends is in docs/sessions.md. Default: none.
	SessionHeader string `json:"session_header,omitempty"`

	// Sample is the fraction of requests recorded, in (0, 1]. The choice is a hash of the
	// session id (whole sessions), else the request id, and SampleSeed. Default: 1 (all).
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
	// dropped (and counted). Whatever its length, the requests waiting hold at most 64 MiB of
	// request bodies: a request whose body does not fit is written to the records file only,
	// its trace and payload lines left out and counted (reason queue_bytes). Default: 4096.
	Queue int `json:"queue,omitempty"`

	// Format is the format of the records and trace files: "jsonl" (one JSON object per line,
	// the default) or "parquet", for the query engines a fleet keeps request data in (DuckDB,
	// Spark, Trino, ClickHouse): files in hourly Hive-style partitions under the folder,
	// dir/dt=YYYY-MM-DD/hour=HH/<kind>-<UTC start>.parquet, by each request's arrival, with
	// the same fields as the JSONL and null where a value is unknown (docs/parquet.md lists
	// every column). A Parquet file can be read once it is closed: when it rolls (rotate_size,
	// rotate_age, rotate_rows), when its hour has passed and a minute went by without a
	// request of that hour ending, and on shutdown; a crash loses the rows of the files still
	// open. Payload files stay JSONL. llmtap report, trace stats, trace merge and replay read
	// either format. Default: jsonl.
	Format string `json:"format,omitempty"`

	// RotateRows starts a new Parquet file once the current one holds this many rows
	// (format parquet only). Default: 1048576.
	RotateRows int64 `json:"rotate_rows,omitempty"`

	// OTLPLogs also exports every request this recording keeps (the same routes, models and
	// sampling) as one OpenTelemetry log record over OTLP, with every field of the records
	// file as an attribute (docs/logs.md) and never a request body, to where the standard
	// OTEL_EXPORTER_OTLP_* variables say (OTLP over http/protobuf to localhost:4318 when they
	// say nothing). The export is batched off the request path through a bounded queue of
	// 2048 records (OTEL_BLRP_MAX_QUEUE_SIZE): what does not fit, or fails to send, is
	// dropped and counted (llmtap_otlp_logs_dropped_total), never waited for.
	// OTEL_LOGS_EXPORTER=otlp (or console) turns it on for every recording. Default: off.
	OTLPLogs bool `json:"otlp_logs,omitempty"`
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

// Check reports everything that is wrong with the record options at once (the Caddyfile parser
// calls it at the end of the block; provisioning the handler checks them again).
func (c *RecordConfig) Check() error {
	_, err := c.options()
	return err
}

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
		Format:       c.Format,
		RotateRows:   c.RotateRows,
	}
	if key, err := fleetKey(); err != nil {
		errs = append(errs, fmt.Errorf("record: %w", err))
	} else {
		o.FleetKey = key
	}
	files := c.Files
	if len(files) == 0 {
		files = []string{recfile.KindRecords, recfile.KindTrace}
	}
	for _, f := range files {
		switch f {
		case recfile.KindRecords:
			o.Records = true
		case recfile.KindTrace:
			o.Trace = true
		case recfile.KindPayloads:
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
	entry         *process.Recorder
	sessionHeader string
	// releaseLogs lets go of the recording's log route, nil when it exports no log records.
	releaseLogs func()
	// released makes releasing idempotent without touching Handler.recording, which requests
	// still being served by the old config read.
	released atomic.Bool
}

// provisionRecording takes a hold on the recorder of the handler's folder and options, when
// the handler records, and on a log route when the config or the environment asks for log
// records (OTLPLogs). A config that asks fails when the exporter cannot be configured; when
// only the environment asks, the failure is logged and the proxy goes on without log records,
// as with the other OTEL_* signals.
func (h *Handler) provisionRecording() error {
	if h.Record == nil {
		return nil
	}
	opts, err := h.Record.options()
	if err != nil {
		return err
	}
	e, err := h.proc.HoldRecorder(opts)
	if err != nil {
		return fmt.Errorf("starting the recorder in %s: %w", opts.Dir, err)
	}
	h.recording = &recording{entry: e, sessionHeader: h.Record.SessionHeader}
	if h.Record.OTLPLogs || otel.LogsEnabled(os.Getenv) {
		release, err := h.proc.HoldLogRoute(e, opts)
		switch {
		case err == nil:
			h.recording.releaseLogs = release
		case h.Record.OTLPLogs:
			e.Release()
			h.recording = nil
			return fmt.Errorf("record otlp_logs: %w", err)
		default:
			h.logger.Error("OpenTelemetry log records are off", zap.Error(err))
		}
	}
	h.route.Recorder = e.Key
	if opts.Trace && opts.FleetKey == nil && h.proc.OnceKeyless() {
		h.logger.Info("recording traces without "+FleetKeyEnv+": prefix hash_ids agree within this process only, so traces of several instances merge without prefix sharing; give every instance the same key (16 bytes or more, hex or base64) to merge them",
			zap.String("dir", opts.Dir))
	}
	return nil
}

// releaseRecording drops the handler's hold; the recorder stops when no config uses it.
func (h *Handler) releaseRecording() {
	if rc := h.recording; rc != nil && rc.released.CompareAndSwap(false, true) {
		if rc.releaseLogs != nil {
			rc.releaseLogs()
		}
		rc.entry.Release()
	}
}

// planRecording is the recorder options of a recording started through the API: those of a
// record block with the request's fields.
func planRecording(req *llmtapv1.RecordingStartRequest) (recorder.Options, error) {
	cfg := RecordConfig{
		Dir: req.GetDir(), Files: req.GetFiles(), Sample: req.GetSample(), Models: req.GetModels(),
		Routes: req.GetRoutes(), RedactText: req.GetRedactText(), RedactFields: req.GetRedactFields(),
	}
	return cfg.options()
}

// maxSessionID bounds the session id taken from a header.
const maxSessionID = 256

// tag takes the session id of a recorded request into rec. It is nil-safe.
func (rc *recording) tag(r *http.Request, rec *record.Record) {
	if rc == nil {
		return
	}
	if rc.sessionHeader != "" {
		v := r.Header.Get(rc.sessionHeader)
		if len(v) > maxSessionID {
			v = v[:maxSessionID]
		}
		rec.SessionID = v
	}
}
