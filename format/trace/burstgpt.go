package trace

import (
	"bytes"
	"time"
)

// burstGPTDecoder reads BurstGPT rows. The first release has
// Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type; the third adds
// Session ID and Elapsed time after Timestamp. Columns are found by name, so both work.
type burstGPTDecoder struct {
	row                  csvRow
	ts, model, in, out   int
	session, elapsed     int // -1 when the release has no such column
	tsName, inName       string
	outName, elapsedName string
}

func newBurstGPTDecoder(cols [][]byte) (decoder, error) {
	h := columnIndex(cols)
	idx, err := h.require("Timestamp", "Model", "Request tokens", "Response tokens")
	if err != nil {
		return nil, err
	}
	d := &burstGPTDecoder{ts: idx[0], model: idx[1], in: idx[2], out: idx[3],
		session: h.optional("Session ID"), elapsed: h.optional("Elapsed time")}
	d.tsName, d.inName, d.outName = h.names[d.ts], h.names[d.in], h.names[d.out]
	if d.elapsed >= 0 {
		d.elapsedName = h.names[d.elapsed]
	}
	d.row = csvRow{width: len(cols), need: max(d.ts, d.model, d.in, d.out, d.session, d.elapsed) + 1}
	return d, nil
}

func (d *burstGPTDecoder) decode(line []byte, req *Request) error {
	if err := d.row.split(line); err != nil {
		return err
	}
	f := d.row.fields
	var err error
	if req.Timestamp, err = parseOffset(f[d.ts], time.Second); err != nil {
		return errField(d.tsName, err)
	}
	if req.InputLength, err = parseCount(f[d.in]); err != nil {
		return errField(d.inName, err)
	}
	if req.OutputLength, err = parseCount(f[d.out]); err != nil {
		return errField(d.outName, err)
	}
	// The dataset marks a request that failed with a zero-token response.
	req.Failed = req.OutputLength == 0
	req.Model = string(bytes.TrimSpace(f[d.model]))
	if d.session >= 0 {
		req.SessionID = string(bytes.TrimSpace(f[d.session]))
	}
	if d.elapsed >= 0 && len(bytes.TrimSpace(f[d.elapsed])) > 0 {
		if req.Latency, err = parseOffset(f[d.elapsed], time.Second); err != nil {
			return errField(d.elapsedName, err)
		}
	}
	return nil
}
