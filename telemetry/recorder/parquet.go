package recorder

import (
	"errors"
	"time"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

// pastHourIdle is how long the file of a past hour stays open after its last row: requests
// that arrived in the hour keep ending after it.
const pastHourIdle = time.Minute

// pqFiles are the records and trace files of a recorder whose Format is FormatParquet.
type pqFiles struct {
	records *parquetfile.Writer[parquetfile.RecordRow]
	trace   *parquetfile.Writer[parquetfile.TraceRow]
}

func newPQFiles(o Options) (*pqFiles, error) {
	wo := parquetfile.WriterOptions{Dir: o.Dir, MaxRows: o.RotateRows, MaxBytes: o.RotateBytes, MaxAge: o.RotateAge}
	p := &pqFiles{}
	var err error
	if o.Records {
		wo.Kind = recfile.KindRecords
		if p.records, err = parquetfile.NewWriter[parquetfile.RecordRow](wo); err != nil {
			return nil, err
		}
	}
	if o.Trace {
		wo.Kind = recfile.KindTrace
		if p.trace, err = parquetfile.NewWriter[parquetfile.TraceRow](wo); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// recordSize estimates a record row's bytes in memory, for the row group's bound.
func recordSize(r *record.Record) int64 {
	return 1024 + 8*int64(len(r.InterChunkMs)) + int64(len(r.ErrorMsg)+len(r.RequestID)+len(r.Path))
}

func (p *pqFiles) writeRecord(at time.Time, r *record.Record) error {
	row := parquetfile.FromRecord(r)
	return p.records.Write(at, recordSize(r), func(time.Time) parquetfile.RecordRow { return row })
}

func (p *pqFiles) writeTrace(at time.Time, r *record.Record, ids []int64, t trace.Session) error {
	f := parquetfile.TraceFields{InputLength: r.InputTokens, OutputLength: r.OutputTokens, HashIDs: ids,
		SessionID: t.ID, Delay: t.Delay, HasDelay: t.HasDelay, Model: r.Model, Tenant: r.Tenant}
	// The row keeps ids beyond this call: the writer's scratch slice is reused.
	f.HashIDs = append([]int64(nil), ids...)
	return p.trace.Write(at, 256+8*int64(len(ids)), func(start time.Time) parquetfile.TraceRow {
		return parquetfile.NewTraceRow(r.Start, start, f)
	})
}

// tick closes the files of past hours no longer written to, and files past their age.
func (p *pqFiles) tick(now time.Time) error {
	var errs []error
	if p.records != nil {
		errs = append(errs, p.records.CloseIdle(now, pastHourIdle))
	}
	if p.trace != nil {
		errs = append(errs, p.trace.CloseIdle(now, pastHourIdle))
	}
	return errors.Join(errs...)
}

func (p *pqFiles) close() error {
	var errs []error
	if p.records != nil {
		errs = append(errs, p.records.Close())
	}
	if p.trace != nil {
		errs = append(errs, p.trace.Close())
	}
	return errors.Join(errs...)
}

func (p *pqFiles) paths() []string {
	var ps []string
	if p.records != nil {
		ps = append(ps, p.records.Paths()...)
	}
	if p.trace != nil {
		ps = append(ps, p.trace.Paths()...)
	}
	return ps
}
