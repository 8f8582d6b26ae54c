package trace

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/telemetry/record"
)

// pqSource reads the requests of the recorder's Parquet files (format/parquetfile): a
// trace or records file, or every file of one kind under a folder of hourly partitions, in
// partition order. A request reads as it does from the same row in JSONL.
type pqSource struct {
	files []string
	kind  string
	i     int
	tr    *parquetfile.Reader[parquetfile.TraceRow]
	rr    *parquetfile.Reader[parquetfile.RecordRow]
	num   []byte
	// origin is the zero of the timestamps: the first trace file's start, or the first
	// record's start (as recordsDecoder).
	origin     time.Time
	haveOrigin bool
	sessions   *record.Sessions
	rows       int
	// arrival is the absolute arrival of the last trace row read.
	arrival time.Time
}

// openParquet opens the Parquet input at path for format f (FormatAuto: a trace when path
// holds trace files, else records).
func openParquet(path string, f Format) (*pqSource, Format, error) {
	kind := recfile.KindTrace
	switch f {
	case FormatAuto:
		if _, err := parquetfile.Files(path, recfile.KindTrace); err != nil {
			kind = recfile.KindRecords
		}
	case FormatMooncake:
	case FormatRecords:
		kind = recfile.KindRecords
	default:
		return nil, f, fmt.Errorf("%s: Parquet holds llmtap traces or records, not %s", path, f)
	}
	files, err := parquetfile.Files(path, kind)
	if err != nil {
		return nil, f, err
	}
	if len(files) == 1 && f == FormatAuto {
		// A single file says its kind in its metadata, whatever its name.
		k, _, err := parquetfile.Meta(files[0])
		if err != nil {
			return nil, f, err
		}
		if k == recfile.KindRecords || k == recfile.KindTrace {
			kind = k
		}
	}
	f = FormatMooncake
	if kind == recfile.KindRecords {
		f = FormatRecords
	}
	return &pqSource{files: files, kind: kind}, f, nil
}

// next returns the next request, io.EOF after the last.
func (s *pqSource) next(req *Request) error {
	for {
		if s.tr == nil && s.rr == nil {
			if s.i == len(s.files) {
				return io.EOF
			}
			var err error
			if s.kind == recfile.KindTrace {
				s.tr, err = parquetfile.Open[parquetfile.TraceRow](s.files[s.i])
			} else {
				s.rr, err = parquetfile.Open[parquetfile.RecordRow](s.files[s.i])
			}
			s.i++
			if err != nil {
				return err
			}
		}
		var err error
		if s.tr != nil {
			err = s.nextTrace(req)
		} else {
			err = s.nextRecord(req)
		}
		if errors.Is(err, io.EOF) {
			s.Close()
			continue
		}
		if err == nil {
			s.rows++
		}
		return err
	}
}

func (s *pqSource) Close() error {
	var err error
	if s.tr != nil {
		err = s.tr.Close()
	}
	if s.rr != nil {
		err = s.rr.Close()
	}
	s.tr, s.rr = nil, nil
	return err
}

// offset converts a float of unit as JSON would write it and the JSONL readers parse it, so
// both read the same duration.
func (s *pqSource) offset(v float64, unit time.Duration) (time.Duration, error) {
	s.num = s.num[:0]
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		s.num = strconv.AppendFloat(s.num, v, 'e', -1, 64)
	} else {
		s.num = strconv.AppendFloat(s.num, v, 'f', -1, 64)
	}
	return parseOffset(s.num, unit)
}

func (s *pqSource) where(name string, err error) error {
	file := s.files[s.i-1]
	var row int64
	if s.tr != nil {
		row = s.tr.Row()
	} else if s.rr != nil {
		row = s.rr.Row()
	}
	return fmt.Errorf("%s: row %d: %s: %w", file, row, name, err)
}

func count(v int64) (int, error) {
	if v < 0 || v > maxCount {
		return 0, fmt.Errorf("%d is out of range (0 to %d)", v, maxCount)
	}
	return int(v), nil
}

func (s *pqSource) nextTrace(req *Request) error {
	row, err := s.tr.Next()
	if err != nil {
		return err
	}
	start := s.tr.Start()
	if !s.haveOrigin {
		s.origin, s.haveOrigin = start, true
	}
	if _, err := s.offset(row.Timestamp, time.Millisecond); err != nil {
		return s.where("timestamp", err)
	}
	// The arrival from the first file's start, cut to the microsecond as the JSONL trace
	// writes it; a row that arrived before that start (it ended after the row that opened the
	// file) at the start, as JSONL writes such a row of its file.
	s.arrival = row.Start
	*req = Request{Timestamp: max(row.Start.Sub(s.origin), 0).Truncate(time.Microsecond)}
	if req.InputLength, err = count(row.InputLength); err != nil {
		return s.where("input_length", err)
	}
	if req.OutputLength, err = count(row.OutputLength); err != nil {
		return s.where("output_length", err)
	}
	if len(row.HashIDs) > limits.MaxHashIDs {
		return s.where("hash_ids", fmt.Errorf("%d ids: over the limit of %d a row (limits.MaxHashIDs)", len(row.HashIDs), limits.MaxHashIDs))
	}
	req.HashIDs = row.HashIDs
	if row.SessionID != nil {
		req.SessionID = *row.SessionID
	}
	if row.Delay != nil {
		if req.Delay, err = s.offset(*row.Delay, time.Millisecond); err != nil {
			return s.where("delay", err)
		}
	}
	if row.Model != nil {
		req.Model = *row.Model
	}
	return nil
}

// nextRecord reads a record as recordsDecoder reads its JSON line.
func (s *pqSource) nextRecord(req *Request) error {
	row, err := s.rr.Next()
	if err != nil {
		return err
	}
	r := row.Record()
	if r.Start.IsZero() {
		return s.where("start", errors.New("missing"))
	}
	*req = Request{Model: r.Model, Path: r.Path, Class: r.Class, Failed: r.Error != "", SessionID: r.SessionID}
	if req.InputLength, err = count(r.InputTokens); err != nil {
		return s.where("input_tokens", err)
	}
	if req.OutputLength, err = count(r.OutputTokens); err != nil {
		return s.where("output_tokens", err)
	}
	if r.RequestLatencyMs != nil {
		if req.Latency, err = s.offset(*r.RequestLatencyMs, time.Millisecond); err != nil {
			return s.where("request_latency_ms", err)
		}
	}
	if req.SessionID != "" {
		dur, err := s.offset(r.DurationMs, time.Millisecond)
		if err != nil {
			return s.where("duration_ms", err)
		}
		if s.sessions == nil {
			s.sessions = record.NewSessions(maxRecordSessions)
		}
		req.Delay, _, _ = s.sessions.Turn(req.SessionID, r.Start, r.Start.Add(dur))
	}
	if !s.haveOrigin {
		s.origin, s.haveOrigin = r.Start, true
	}
	req.Timestamp = r.Start.Sub(s.origin)
	if req.Timestamp == math.MaxInt64 || req.Timestamp == math.MinInt64 {
		return s.where("start", fmt.Errorf("%v is more than 292 years from the first record", r.Start))
	}
	return nil
}
