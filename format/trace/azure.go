package trace

import (
	"bytes"
	"fmt"
	"math"
	"time"
)

// azureDecoder reads Azure LLM inference trace rows: TIMESTAMP,ContextTokens,GeneratedTokens.
type azureDecoder struct {
	row             csvRow
	ts, ctx, gen    int
	tsName, ctxName string
	genName         string
	origin          time.Time
	haveOrigin      bool
}

func newAzureDecoder(cols [][]byte) (decoder, error) {
	h := columnIndex(cols)
	idx, err := h.require("TIMESTAMP", "ContextTokens", "GeneratedTokens")
	if err != nil {
		return nil, err
	}
	d := &azureDecoder{ts: idx[0], ctx: idx[1], gen: idx[2]}
	d.tsName, d.ctxName, d.genName = h.names[d.ts], h.names[d.ctx], h.names[d.gen]
	d.row = csvRow{width: len(cols), need: max(d.ts, d.ctx, d.gen) + 1}
	return d, nil
}

func (d *azureDecoder) decode(line []byte, req *Request) error {
	if err := d.row.split(line); err != nil {
		return err
	}
	f := d.row.fields
	t, err := parseWallTime(f[d.ts])
	if err != nil {
		return errField(d.tsName, err)
	}
	if req.InputLength, err = parseCount(f[d.ctx]); err != nil {
		return errField(d.ctxName, err)
	}
	if req.OutputLength, err = parseCount(f[d.gen]); err != nil {
		return errField(d.genName, err)
	}
	if !d.haveOrigin {
		d.origin, d.haveOrigin = t, true
	}
	req.Timestamp = t.Sub(d.origin)
	if req.Timestamp == math.MaxInt64 || req.Timestamp == math.MinInt64 {
		// Sub saturates; an offset of centuries is corruption, not a trace.
		return errFieldf(d.tsName, "%q is more than 292 years from the first row", bytes.TrimSpace(f[d.ts]))
	}
	return nil
}

// Layouts of the Azure releases. time.Parse accepts a fractional second of any length after
// the seconds field even when the layout has none, which covers 2023's seven digits, 2024's
// six and 2024's omitted fraction on whole seconds.
const (
	layoutSpace     = "2006-01-02 15:04:05"
	layoutSpaceZone = "2006-01-02 15:04:05Z07:00"
	layoutT         = "2006-01-02T15:04:05"
	layoutTZone     = "2006-01-02T15:04:05Z07:00"
)

// parseWallTime reads "YYYY-MM-DD HH:MM:SS[.fraction][zone]" ("T" may separate date and time;
// the zone is "Z" or ±HH:MM). A time without a zone is taken as UTC.
func parseWallTime(b []byte) (time.Time, error) {
	b = bytes.TrimSpace(b)
	s := string(b)
	if len(s) < len(layoutSpace) {
		return time.Time{}, badTime(s)
	}
	tsep := s[10] == 'T'
	i := len(layoutSpace)
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	zone := i < len(s)
	layout := layoutSpace
	switch {
	case tsep && zone:
		layout = layoutTZone
	case tsep:
		layout = layoutT
	case zone:
		layout = layoutSpaceZone
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, badTime(s)
	}
	return t, nil
}

func badTime(s string) error {
	return fmt.Errorf("%q is not a time like 2023-11-16 18:17:03.9799600 or 2024-05-12 00:00:00.001163+00:00", s)
}
