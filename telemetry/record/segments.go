package record

// Segment is one part of a request's time, in the order a stacked bar draws them.
type Segment struct {
	// Name is one of "proxy", "queue", "load", "prefill", "inference", "network",
	// "upstream", "decode", "generation".
	Name string  `json:"name"`
	Ms   float64 `json:"ms"`
}

// Segments splits the request's latency (request_latency_ms, else duration_ms) into the parts
// of a stacked bar: the proxy's own (proxy_ms + connect_ms + send_ms), then the server's
// queue, load and prefill (or inference) where it reported them, then "network" (what is left
// of the latency beside the server's figures: the network both ways and the server's
// unreported work), then its decode. Without server figures the rest is "upstream" up to the
// first token and "generation" after it. Negative remainders (a server that claims more than
// the proxy saw) count as zero. Nil when the record has no split.
func (r *Record) Segments() []Segment {
	s := r.Split
	if s == nil {
		return nil
	}
	total := r.DurationMs
	if r.RequestLatencyMs != nil {
		total = *r.RequestLatencyMs
	}
	var out []Segment
	used := 0.0
	add := func(name string, v float64) {
		v = max(v, 0)
		out = append(out, Segment{name, v})
		used += v
	}
	val := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	add("proxy", val(s.ProxyMs)+val(s.ConnectMs)+val(s.SendMs))
	server := s.QueueMs != nil || s.PrefillMs != nil || s.InferenceMs != nil
	if !server {
		if r.TTFTMs != nil {
			add("upstream", *r.TTFTMs-used)
			add("generation", total-used)
		} else {
			add("upstream", total-used)
		}
		return out
	}
	for _, p := range []struct {
		name string
		v    *float64
	}{{"queue", s.QueueMs}, {"load", s.LoadMs}, {"prefill", s.PrefillMs}, {"inference", s.InferenceMs}} {
		if p.v != nil {
			add(p.name, *p.v)
		}
	}
	decode := val(s.DecodeMs)
	add("network", total-used-decode)
	if s.DecodeMs != nil {
		add("decode", decode)
	}
	return out
}
