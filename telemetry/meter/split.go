package meter

import (
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
		if u.Wrote >= u.GotConn {
			s.SendMs = record.MsPtr(u.Wrote - u.GotConn)
			if u.FirstByte >= u.Wrote {
				s.UpstreamHeadersMs = record.MsPtr(u.FirstByte - u.Wrote)
			}
		}
	}
	if r.TTFTMs != nil {
		v := *r.TTFTMs
		if u.Wrote > 0 {
			v -= record.Ms(u.Wrote)
		}
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
		// The parts are whole nanoseconds in float milliseconds: a difference within a
		// nanosecond of zero is float rounding, not a negative queue.
		if q := st.TotalMs - st.LoadMs - st.PromptEvalMs - st.EvalMs; st.TotalMs > 0 && q > -1e-6 {
			s.QueueMs, s.QueueSource = server(max(q, 0)), record.SplitDerived
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
