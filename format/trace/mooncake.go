package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/valyala/fastjson"
)

// mooncakeDecoder reads Mooncake / AIPerf mooncake_trace lines.
type mooncakeDecoder struct {
	p   fastjson.Parser
	num []byte
}

func (d *mooncakeDecoder) decode(line []byte, req *Request) error {
	o, err := jsonObject(&d.p, line)
	if err != nil {
		return err
	}
	var ok bool
	if req.Timestamp, _, err = jsonOffset(&d.num, o, "timestamp", time.Millisecond); err != nil {
		return err
	}
	if req.InputLength, ok, err = jsonCount(&d.num, o, "input_length"); err != nil {
		return err
	}
	if !ok {
		if present(o, "text_input") != nil || present(o, "messages") != nil {
			return errFieldf("input_length", "missing (text_input and messages rows are not supported)")
		}
		return errFieldf("input_length", "missing")
	}
	if req.OutputLength, _, err = jsonCount(&d.num, o, "output_length"); err != nil {
		return err
	}
	if req.HashIDs, err = jsonHashIDs(&d.num, o, "hash_ids"); err != nil {
		return err
	}
	if req.SessionID, err = jsonString(o, "session_id"); err != nil {
		return err
	}
	if req.Delay, _, err = jsonOffset(&d.num, o, "delay", time.Millisecond); err != nil {
		return err
	}
	// llmtap's recorder names the model on every line (AIPerf's loader ignores the field).
	if req.Model, err = jsonString(o, "model"); err != nil {
		return err
	}
	return nil
}

// WriterOptions configures a MooncakeWriter.
type WriterOptions struct {
	// RoundMs writes timestamps and delays as whole milliseconds, for consumers (older AIPerf
	// releases, the original Mooncake tools) that take an integer. By default they are written
	// exactly, with up to six fractional digits, which current AIPerf accepts.
	RoundMs bool
	// OmitSessions leaves session_id and delay out. AIPerf treats rows with a session as turns
	// it appends the previous turns to, so traces whose prompts already contain the history
	// (BurstGPT's conversation logs) should be written without them.
	OmitSessions bool
}

// MooncakeWriter writes requests as Mooncake / AIPerf mooncake_trace JSONL: "timestamp" and
// "delay" in milliseconds, "input_length", "output_length", "hash_ids" (always present, empty
// when the request has none), "session_id" when set, and "model" when the request names one,
// as llmtap's recorder writes it (AIPerf ignores it; llmtap replay sends it). It buffers; call
// Flush at the end.
type MooncakeWriter struct {
	w   *bufio.Writer
	opt WriterOptions
	buf []byte
}

// NewMooncakeWriter returns a writer to w.
func NewMooncakeWriter(w io.Writer, opt WriterOptions) *MooncakeWriter {
	return &MooncakeWriter{w: bufio.NewWriterSize(w, 64<<10), opt: opt}
}

// Write writes one request. Negative timestamps or delays are an error: replayers schedule
// from zero. Sort and rebase a records trace first (SortByTime, Rebase).
func (w *MooncakeWriter) Write(r Request) error {
	if r.Timestamp < 0 || r.Delay < 0 {
		return fmt.Errorf("negative timestamp %v or delay %v", r.Timestamp, r.Delay)
	}
	if r.InputLength < 0 || r.OutputLength < 0 {
		return errors.New("negative token count")
	}
	l := TraceLine{Timestamp: r.Timestamp, InputLength: int64(r.InputLength), OutputLength: int64(r.OutputLength),
		HashIDs: r.HashIDs, Model: r.Model}
	if !w.opt.OmitSessions {
		l.Session = Session{ID: r.SessionID, Delay: r.Delay, HasDelay: r.Delay > 0}
	}
	if w.opt.RoundMs {
		l.Timestamp = r.Timestamp.Round(time.Millisecond)
		l.Session.Delay = r.Delay.Round(time.Millisecond)
	}
	w.buf = AppendTraceLine(w.buf[:0], &l)
	_, err := w.w.Write(w.buf)
	return err
}

// Flush writes buffered lines to the underlying writer.
func (w *MooncakeWriter) Flush() error { return w.w.Flush() }

// WriteMooncake writes reqs to w as a Mooncake JSONL trace (MooncakeWriter), flushed.
func WriteMooncake(w io.Writer, reqs []Request, opt WriterOptions) error {
	mw := NewMooncakeWriter(w, opt)
	for _, r := range reqs {
		if err := mw.Write(r); err != nil {
			return err
		}
	}
	return mw.Flush()
}
