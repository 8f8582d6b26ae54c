package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/internal/limits"
)

// Options configures a Reader.
type Options struct {
	// Format is the file's format; FormatAuto (the zero value) detects it from the first line.
	Format Format
	// Name is the file name used in error positions; Open sets it to the path. Default "trace".
	Name string
	// SkipBad skips malformed lines and counts them in Info instead of ending the read with an
	// error. A malformed CSV header, or a JSONL first line that hides the format, still ends it.
	SkipBad bool
	// MaxLineBytes bounds one line (default DefaultMaxLineBytes).
	MaxLineBytes int
	// MaxMemory bounds the memory of the requests ReadFile and ReadSorted hold (default
	// limits.MaxTraceMemory); a trace that needs more is refused at the line that passes it.
	MaxMemory int64
}

// Info describes what a Reader has read so far.
type Info struct {
	Name   string
	Format Format // FormatAuto when the input was empty and no format was given
	Lines  int    // lines consumed, including header and blank lines
	// Torn is the line number of a torn last JSONL line (no newline, does not parse), 0 if none.
	Torn int
	// Skipped counts lines skipped under Options.SkipBad; FirstSkipped says why the first was.
	Skipped      int
	FirstSkipped error
}

// decoder turns one data line into a Request. It returns errors made with errField so the
// reader can name the field.
type decoder interface {
	decode(line []byte, req *Request) error
}

// Reader streams the requests of one trace file. It is not safe for concurrent use.
type Reader struct {
	lr      *lineReader
	dec     decoder
	info    Info
	skipBad bool
	pending []byte // a data line read while detecting the format
	pendEnd bool   // whether pending ended with a newline
	closer  io.Closer
	pq      *pqSource // Parquet input (Open of a .parquet file or a folder of them)
	done    bool
	maxMem  int64 // Options.MaxMemory, defaulted
}

// NewReader returns a Reader of r. It reads the first line to detect the format (or to check
// the header of a CSV format), so a file in an unknown or mismatched format fails here.
func NewReader(r io.Reader, opt Options) (*Reader, error) {
	if opt.Name == "" {
		opt.Name = "trace"
	}
	if opt.MaxMemory <= 0 {
		opt.MaxMemory = limits.MaxTraceMemory
	}
	rd := &Reader{
		lr:      newLineReader(r, opt.MaxLineBytes),
		info:    Info{Name: opt.Name, Format: opt.Format},
		skipBad: opt.SkipBad,
		maxMem:  opt.MaxMemory,
	}
	if err := rd.start(opt.Format); err != nil {
		return nil, err
	}
	return rd, nil
}

// Open opens a trace file; Close the Reader to close the file. A .parquet file, or a folder
// holding the recorder's Parquet files in hourly partitions, reads as the JSONL trace or
// records they hold (format/parquetfile).
func Open(path string, opt Options) (*Reader, error) {
	if parquetfile.Is(path) {
		pq, f, err := openParquet(path, opt.Format)
		if err != nil {
			return nil, err
		}
		if opt.Name == "" {
			opt.Name = path
		}
		if opt.MaxMemory <= 0 {
			opt.MaxMemory = limits.MaxTraceMemory
		}
		return &Reader{lr: newLineReader(bytes.NewReader(nil), 0), info: Info{Name: opt.Name, Format: f},
			pq: pq, closer: pq, maxMem: opt.MaxMemory}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if opt.Name == "" {
		opt.Name = path
	}
	rd, err := NewReader(f, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	rd.closer = f
	return rd, nil
}

// Close closes the file a Reader made by Open reads; for NewReader it does nothing.
func (r *Reader) Close() error {
	if r.closer == nil {
		return nil
	}
	c := r.closer
	r.closer = nil
	return c.Close()
}

// Info returns what has been read so far; after the last request it is final.
func (r *Reader) Info() Info { r.info.Lines = r.lr.line; return r.info }

// Arrival returns the absolute arrival of the request Next returned last, when the input
// records one (the recorder's Parquet trace: its start column); ok is false otherwise.
func (r *Reader) Arrival() (at time.Time, ok bool) {
	if r.pq == nil || r.pq.arrival.IsZero() {
		return time.Time{}, false
	}
	return r.pq.arrival, true
}

// Format returns the format being read.
func (r *Reader) Format() Format { return r.info.Format }

// All iterates over the remaining requests. It stops after the first error it yields.
func (r *Reader) All() iter.Seq2[Request, error] {
	return func(yield func(Request, error) bool) {
		for {
			req, err := r.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if !yield(req, err) || err != nil {
				return
			}
		}
	}
}

// Next returns the next request, io.EOF after the last one, or a *ParseError for a malformed
// line (unless Options.SkipBad). After an error, Next keeps returning io.EOF.
func (r *Reader) Next() (Request, error) {
	if r.pq != nil {
		return r.nextParquet()
	}
	for !r.done {
		line, terminated, err := r.take()
		if err != nil {
			r.done = true
			if errors.Is(err, io.EOF) {
				return Request{}, io.EOF
			}
			return Request{}, at(r.info.Name, r.lr.line, err)
		}
		if blank(line) {
			continue
		}
		var req Request
		err = r.dec.decode(line, &req)
		if err == nil {
			return req, nil
		}
		if !terminated && r.info.Format.jsonl() {
			// Only the last line of a file can lack its newline: a crash tore it.
			r.info.Torn = r.lr.line
			r.done = true
			return Request{}, io.EOF
		}
		perr := at(r.info.Name, r.lr.line, err)
		if !r.skipBad {
			r.done = true
			return Request{}, perr
		}
		if r.info.Skipped == 0 {
			r.info.FirstSkipped = perr
		}
		r.info.Skipped++
	}
	return Request{}, io.EOF
}

// nextParquet returns the next request of Parquet input. Its rows count as the lines.
func (r *Reader) nextParquet() (Request, error) {
	var req Request
	for !r.done {
		err := r.pq.next(&req)
		r.lr.line = r.pq.rows
		if err == nil {
			return req, nil
		}
		r.done = true
		if !errors.Is(err, io.EOF) {
			return Request{}, err
		}
	}
	return Request{}, io.EOF
}

// take returns the line held back by detection, or the next one.
func (r *Reader) take() ([]byte, bool, error) {
	if r.pending != nil {
		b := r.pending
		r.pending = nil
		return b, r.pendEnd, nil
	}
	return r.lr.next()
}

// start reads up to the first non-blank line and sets the decoder: a CSV header is consumed,
// a JSONL line is held back as the first data line.
func (r *Reader) start(f Format) error {
	var line []byte
	var terminated bool
	for {
		b, t, err := r.lr.next()
		if errors.Is(err, io.EOF) {
			// An empty file is an empty trace: a recorder that has just started writes one.
			r.dec, r.done = nopDecoder{}, true
			return nil
		}
		if err != nil {
			return at(r.info.Name, r.lr.line, err)
		}
		if !blank(b) {
			line, terminated = b, t
			break
		}
	}
	if f == FormatAuto {
		var err error
		f, err = detect(line)
		if err != nil {
			if !terminated && json0(line) {
				// The only line is a torn JSON object: nothing was completely written.
				r.info.Torn, r.dec, r.done = r.lr.line, nopDecoder{}, true
				return nil
			}
			return at(r.info.Name, r.lr.line, err)
		}
		r.info.Format = f
	}
	switch f {
	case FormatMooncake:
		r.dec = &mooncakeDecoder{}
	case FormatRecords:
		r.dec = &recordsDecoder{}
	case FormatPayloads:
		r.dec = &payloadsDecoder{}
	case FormatAzure, FormatBurstGPT:
		cols, err := splitCSV(nil, line)
		if err != nil {
			return at(r.info.Name, r.lr.line, err)
		}
		var dec decoder
		if f == FormatAzure {
			dec, err = newAzureDecoder(cols)
		} else {
			dec, err = newBurstGPTDecoder(cols)
		}
		if err != nil {
			return at(r.info.Name, r.lr.line, err)
		}
		r.dec = dec
		return nil
	default:
		return fmt.Errorf("unknown trace format %q", f)
	}
	r.pending = bytes.Clone(line)
	r.pendEnd = terminated
	return nil
}

// json0 reports whether a line looks like the start of a JSON object.
func json0(line []byte) bool { return bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("{")) }

// detect names the format of a file from its first non-blank line.
func detect(line []byte) (Format, error) {
	if json0(line) {
		if countValues(line, maxLineValues) > maxLineValues {
			return "", errTooManyValues
		}
		var p fastjson.Parser
		v, err := p.ParseBytes(line)
		if err != nil {
			return "", fmt.Errorf("first line is not a JSON object: %v", err)
		}
		o, err := v.Object()
		if err != nil {
			return "", fmt.Errorf("first line is not a JSON object: %v", err)
		}
		has := func(k string) bool { return o.Get(k) != nil }
		switch {
		case (has("payload") || has("payload_b64")) && has("timestamp_ms"):
			return FormatPayloads, nil
		case has("request_id") && has("start"):
			return FormatRecords, nil
		case has("input_length") || has("hash_ids"):
			return FormatMooncake, nil
		}
		var keys []string
		o.Visit(func(k []byte, _ *fastjson.Value) { keys = append(keys, string(k)) })
		return "", fmt.Errorf("unrecognized JSON trace (keys %s): want mooncake (input_length, hash_ids), records (request_id, start) or payloads (timestamp_ms, payload or payload_b64)", strings.Join(keys, ", "))
	}
	if bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("[")) {
		return "", errors.New("a JSON array is not a trace: write one JSON object per line")
	}
	cols, err := splitCSV(nil, line)
	if err != nil {
		return "", err
	}
	idx := columnIndex(cols)
	switch {
	case idx.has("contexttokens") || idx.has("generatedtokens"):
		return FormatAzure, nil
	case idx.has("request tokens") || idx.has("response tokens"):
		return FormatBurstGPT, nil
	}
	return "", fmt.Errorf("unrecognized trace header %q: want Azure (TIMESTAMP,ContextTokens,GeneratedTokens), BurstGPT (Timestamp,…,Request tokens,Response tokens,…) or a JSONL trace", truncate(line, 120))
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// nopDecoder serves an empty file.
type nopDecoder struct{}

func (nopDecoder) decode([]byte, *Request) error { return io.EOF }
