package trace

import (
	"math"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/telemetry/record"
)

// recordsDecoder reads llmtap's per-request records (telemetry/record.Record, one JSON object
// per line). It reads only the fields a trace needs and ignores the rest, so records from newer
// llmtap versions with more fields still read.
type recordsDecoder struct {
	p          fastjson.Parser
	num        []byte
	origin     time.Time
	haveOrigin bool
	// sessions gives a session's later turns their delay (from their start and the previous
	// turn's start plus duration_ms); at most maxRecordSessions sessions.
	sessions *record.Sessions
}

// maxRecordSessions bounds the sessions a records reader remembers; the turns of sessions
// beyond it are read without a delay.
const maxRecordSessions = 1 << 20

func (d *recordsDecoder) decode(line []byte, req *Request) error {
	o, err := jsonObject(&d.p, line)
	if err != nil {
		return err
	}
	s, err := jsonString(o, "start")
	if err != nil {
		return err
	}
	if s == "" {
		return errFieldf("start", "missing")
	}
	start, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errFieldf("start", "%q is not an RFC 3339 time", s)
	}
	if req.InputLength, _, err = jsonCount(&d.num, o, "input_tokens"); err != nil {
		return err
	}
	if req.OutputLength, _, err = jsonCount(&d.num, o, "output_tokens"); err != nil {
		return err
	}
	if req.Model, err = jsonString(o, "model"); err != nil {
		return err
	}
	if req.Path, err = jsonString(o, "path"); err != nil {
		return err
	}
	if req.Class, err = jsonString(o, "class"); err != nil {
		return err
	}
	errClass, err := jsonString(o, "error")
	if err != nil {
		return err
	}
	req.Failed = errClass != ""
	if req.Latency, _, err = jsonOffset(&d.num, o, "request_latency_ms", time.Millisecond); err != nil {
		return err
	}
	if req.SessionID, err = jsonString(o, "session_id"); err != nil {
		return err
	}
	if req.SessionID != "" {
		dur, _, err := jsonOffset(&d.num, o, "duration_ms", time.Millisecond)
		if err != nil {
			return err
		}
		if d.sessions == nil {
			d.sessions = record.NewSessions(maxRecordSessions)
		}
		req.Delay, _, _ = d.sessions.Turn(req.SessionID, start, start.Add(dur))
	}
	if !d.haveOrigin {
		d.origin, d.haveOrigin = start, true
	}
	req.Timestamp = start.Sub(d.origin)
	if req.Timestamp == math.MaxInt64 || req.Timestamp == math.MinInt64 {
		// Sub saturates; an offset of centuries is corruption, not a trace.
		return errFieldf("start", "%q is more than 292 years from the first record", s)
	}
	return nil
}

// Rebase shifts the timestamps of requests so the earliest is zero, which a records trace
// (written in completion order, so possibly starting with a negative offset) needs before it
// is written for a replayer. It returns the shift that was subtracted.
func Rebase(reqs []Request) time.Duration {
	if len(reqs) == 0 {
		return 0
	}
	lo := reqs[0].Timestamp
	for _, r := range reqs[1:] {
		lo = min(lo, r.Timestamp)
	}
	for i := range reqs {
		reqs[i].Timestamp -= lo
	}
	return lo
}
