package recorder

import (
	"errors"
	"fmt"
	"path"
	"time"
)

// Formats of the records and trace files (Options.Format).
const (
	FormatJSONL   = "jsonl"
	FormatParquet = "parquet"
)

// Defaults of Options' zero values.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultRotateBytes  = 256 << 20
	DefaultRotateAge    = time.Hour
	DefaultFlushEvery   = time.Second
	DefaultQueue        = 4096
	// DefaultQueueBytes bounds the request bodies waiting for the writer (Options.QueueBytes).
	DefaultQueueBytes = 64 << 20
	// DefaultMaxHashes is kept for compatibility; block ids no longer need a map.
	DefaultMaxHashes = 1 << 20
)

// Options configure a Recorder. The zero value of a field means its default.
type Options struct {
	// Dir is the folder the files are written to; it is created 0700 when missing. Required.
	Dir string
	// Records, Trace and Payloads choose the files written; at least one must be set.
	Records, Trace, Payloads bool
	// Format is the format of the records and trace files: FormatJSONL (the zero value) or
	// FormatParquet, Parquet files in hourly Hive partitions under Dir (see the package
	// documentation). Payload files are JSONL in either case.
	Format string
	// RotateRows starts a new Parquet file once the current one holds this many rows (JSONL
	// files rotate by RotateBytes and RotateAge only). Default parquetfile.DefaultMaxRows.
	RotateRows int64
	// MaxBodyBytes is the largest request body written to the payload file; a larger body (or
	// one that was cut when captured, and so is not a JSON object) is left out and counted in
	// Stats.Skipped. Default DefaultMaxBodyBytes.
	MaxBodyBytes int
	// Redact is applied to every payload before it is written.
	Redact Redact
	// Sample is the fraction of requests written, in (0, 1]; 0 means 1. The choice is a hash
	// of the session id (whole sessions are kept or left out), else of the request id, and
	// Seed, so it is reproducible and the same on every instance that sees the same id.
	Sample float64
	// Seed varies which requests sampling keeps.
	Seed uint64
	// Routes, when not empty, keeps only requests whose path starts with one of these prefixes.
	Routes []string
	// Models, when not empty, keeps only requests whose model matches one of these names or
	// path.Match patterns ("llama-*").
	Models []string
	// RotateBytes starts a new file of a kind once the current one would grow past it.
	// Default DefaultRotateBytes.
	RotateBytes int64
	// RotateAge starts a new file of a kind once the current one is this old. Default
	// DefaultRotateAge.
	RotateAge time.Duration
	// FlushEvery is the longest a written line waits in the buffer before it reaches the
	// operating system: what a crash of the process can lose. Default DefaultFlushEvery.
	FlushEvery time.Duration
	// Queue is the number of records waiting for the writer before Submit drops. Default
	// DefaultQueue.
	Queue int
	// QueueBytes bounds the request bodies (what the trace's block ids and the payload file
	// read), and the prompts' token ids kept with them (8 bytes each, record.PromptIDs),
	// waiting for the writer, in bytes. A record whose body would take the queue past
	// it is queued without the body: its records line is written, its trace and payload
	// lines are left out and it is counted in Stats.Shed (with only a trace or payload file,
	// nothing of it is written). So a recorder holds at most QueueBytes of bodies, plus Queue
	// records without theirs, however far the writer falls behind. Default DefaultQueueBytes.
	QueueBytes int64
	// MaxHashes is accepted and ignored.
	//
	// Deprecated: block ids are derived from the prompt and FleetKey alone (no map of seen
	// hashes is kept, so nothing is forgotten).
	MaxHashes int
	// FleetKey keys the trace's prefix block ids (HMAC-SHA256 of the previous block's id and
	// the block's tokens, cut to 53 bits), at least MinFleetKey bytes. Recorders given the
	// same key write the same ids for the same prompt prefix, in every file and process, so
	// the traces of a fleet merge (llmtap trace merge); without the key a block's id cannot be
	// confirmed by guessing its text. Empty: a random key drawn once per process, so ids agree
	// across the rotations of one process but not between processes.
	FleetKey []byte
	// MaxSessions bounds the sessions whose latest turn the recorder remembers, to write the
	// next turn's think time (delay). A session that starts while the table is full is not
	// remembered: its next turn is written without a delay, and it is counted in
	// Stats.SessionsUntracked. Default DefaultMaxSessions.
	MaxSessions int
	// SessionIdle is how long a session is remembered after its latest turn's response
	// ended; a turn after a longer pause is written without a delay, as a first turn.
	// Default DefaultSessionIdle.
	SessionIdle time.Duration
}

// Redact says what is removed from request bodies before they are written.
type Redact struct {
	// Fields are top-level body fields dropped entirely ("user", "metadata").
	Fields []string
	// Text replaces the text of messages and prompts by placeholders of the same length in
	// characters: every character but whitespace becomes "x", so word and line structure (and
	// roughly the token count) survive but the words do not.
	Text bool
}

// active reports whether any rule applies.
func (r Redact) active() bool { return len(r.Fields) > 0 || r.Text }

// withDefaults returns o with its zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Sample == 0 {
		o.Sample = 1
	}
	if o.RotateBytes <= 0 {
		o.RotateBytes = DefaultRotateBytes
	}
	if o.RotateAge <= 0 {
		o.RotateAge = DefaultRotateAge
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultFlushEvery
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = DefaultQueueBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxHashes <= 0 {
		o.MaxHashes = DefaultMaxHashes
	}
	return o
}

// tooBig reports whether a file of size bytes must be rotated before a line of n bytes: it
// would grow past RotateBytes (a file takes its first line whatever its length).
func (o Options) tooBig(size int64, n int) bool { return size > 0 && size+int64(n) > o.RotateBytes }

// tooOld reports whether a file started at start must be rotated at now (RotateAge).
func (o Options) tooOld(start, now time.Time) bool { return now.Sub(start) >= o.RotateAge }

// Validate reports every problem of o at once.
func (o Options) Validate() error {
	var errs []error
	if o.Dir == "" {
		errs = append(errs, errors.New("a folder to record to is required"))
	}
	if !o.Records && !o.Trace && !o.Payloads {
		errs = append(errs, errors.New("no file chosen: enable records, trace or payloads"))
	}
	if o.Format != "" && o.Format != FormatJSONL && o.Format != FormatParquet {
		errs = append(errs, fmt.Errorf("format %q: want %s or %s", o.Format, FormatJSONL, FormatParquet))
	}
	if o.Sample < 0 || o.Sample > 1 {
		errs = append(errs, fmt.Errorf("sample must be a fraction between 0 and 1, got %v", o.Sample))
	}
	for _, m := range o.Models {
		if _, err := path.Match(m, ""); err != nil {
			errs = append(errs, fmt.Errorf("model pattern %q is malformed: %v", m, err))
		}
	}
	if o.MaxBodyBytes < 0 || o.RotateBytes < 0 || o.RotateAge < 0 || o.FlushEvery < 0 || o.Queue < 0 || o.QueueBytes < 0 || o.MaxSessions < 0 || o.SessionIdle < 0 || o.RotateRows < 0 {
		errs = append(errs, errors.New("sizes, durations and the queue length must not be negative"))
	}
	if len(o.FleetKey) > 0 && len(o.FleetKey) < MinFleetKey {
		errs = append(errs, fmt.Errorf("the fleet key is %d bytes; want at least %d", len(o.FleetKey), MinFleetKey))
	}
	return errors.Join(errs...)
}
