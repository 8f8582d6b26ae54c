package meter

import (
	"math"
	"time"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Upstream holds the moments of the exchange with the upstream, as offsets from t0, that the
// proxy's HTTP client reports (net/http/httptrace): a zero offset did not happen.
type Upstream struct {
	// Connect is the time spent dialing and in TLS handshakes for a new connection (0 on a
	// reused one).
	Connect time.Duration
	// GotConn is when an upstream connection was in hand, Wrote when the request was written
	// whole, FirstByte when the first response byte arrived.
	GotConn, Wrote, FirstByte time.Duration
}

// SetUpstream hands the meter the upstream exchange's moments, before Finish.
func (m *Meter) SetUpstream(u Upstream) { m.up = u }

// serverTimings is the record's form of what the server reported, from the body (st) or, when
// the body said nothing, from the headers (hdr); nil when neither did.
func serverTimings(st, hdr decode.ServerTimings) *record.ServerTimings {
	if st == (decode.ServerTimings{}) {
		st = hdr
	}
	if st == (decode.ServerTimings{}) {
		return nil
	}
	return &record.ServerTimings{
		Format:          st.Format,
		QueueMs:         record.Ms(st.QueueDuration),
		InferenceMs:     record.Ms(st.InferenceDuration),
		PromptEvalCount: st.PromptEvalCount,
		EvalCount:       st.EvalCount,
		LoadMs:          record.Ms(st.LoadDuration),
		PromptEvalMs:    record.Ms(st.PromptEvalDuration),
		EvalMs:          record.Ms(st.EvalDuration),
		TotalMs:         record.Ms(st.TotalDuration),
	}
}

// split builds the record's TimeSplit from the upstream moments and the server's timings
// (r.Server, r.TTFTMs already set); nil when the request reached no upstream and the server
// reported nothing.
func (m *Meter) split(r *record.Record) *record.TimeSplit {
	u := m.up
	if u.GotConn == 0 && r.Server == nil {
		return nil
	}
	s := new(record.TimeSplit)
	if u.GotConn > 0 {
		s.ConnectMs = record.MsPtr(u.Connect)
		s.ProxyMs = record.MsPtr(max(u.GotConn-u.Connect, 0))
		// The transport reports the write's end from its writing goroutine, which may run
		// after the first response byte was read: the write ended no later than that byte.
		wrote := u.Wrote
		if u.FirstByte > 0 && (wrote == 0 || u.FirstByte < wrote) {
			wrote = u.FirstByte
		}
		if wrote >= u.GotConn {
			s.SendMs = record.MsPtr(wrote - u.GotConn)
			if u.FirstByte >= wrote {
				s.UpstreamHeadersMs = record.MsPtr(u.FirstByte - wrote)
			}
		}
	}
	if r.TTFTMs != nil {
		// From the moment the proxy had a connection and began to send: the server cannot have
		// had the request before (the end of the write is reported late under load, so it is
		// no bound).
		v := *r.TTFTMs - record.Ms(u.GotConn)
		s.UpstreamTTFTMs = &v
	}
	st := r.Server
	if st == nil {
		return s
	}
	server := func(v float64) *float64 { return &v }
	complete := false // the server reports its whole TTFT, queue included
	switch st.Format {
	case decode.FormatOllama:
		s.LoadMs = server(st.LoadMs)
		s.PrefillMs, s.PrefillSource = server(st.PromptEvalMs), record.SplitServer
		s.DecodeMs, s.DecodeSource = server(st.EvalMs), record.SplitServer
		// The parts are whole nanoseconds in float milliseconds: so is their difference, once
		// the float rounding is taken off (which could otherwise make a zero queue negative).
		if q := math.Round((st.TotalMs-st.LoadMs-st.PromptEvalMs-st.EvalMs)*1e6) / 1e6; st.TotalMs > 0 && q >= 0 {
			s.QueueMs, s.QueueSource = server(q), record.SplitDerived
			complete = true
		}
	case decode.FormatLlamaCpp:
		s.PrefillMs, s.PrefillSource = server(st.PromptEvalMs), record.SplitServer
		s.DecodeMs, s.DecodeSource = server(st.EvalMs), record.SplitServer
	case decode.FormatTGI:
		s.QueueMs, s.QueueSource = server(st.QueueMs), record.SplitServer
		s.InferenceMs = server(st.InferenceMs)
	}
	if s.PrefillMs == nil || s.UpstreamTTFTMs == nil {
		return s
	}
	ttft := *s.PrefillMs
	if s.QueueMs != nil {
		ttft += *s.QueueMs
	}
	if s.LoadMs != nil {
		ttft += *s.LoadMs
	}
	s.ServerTTFTMs = &ttft
	up := *s.UpstreamTTFTMs
	net := up - ttft
	s.NetworkMs = &net
	s.TTFTDisagree = ttft > up+record.DisagreeOverMs ||
		(complete && net > record.DisagreeUnderMs+record.DisagreeUnderFrac*up)
	return s
}
