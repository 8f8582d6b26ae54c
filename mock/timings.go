package mock

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The mock's own account of where a response's time went, reported in each server's shape.
// A generation request is split into
//
//	queue    arrival → a slot was free (zero without Config.Slots, or when one was free at once)
//	prefill  slot → just before the first content write
//	decode   first content write → just before the last content write
//
// The times are taken immediately before the writes, so a proxy in front of the mock sees the
// first token after queue+prefill and the last after queue+prefill+decode: the figures are
// causal bounds of what the proxy measures. A non-streaming response has no first write: its
// prefill is the first token's scheduled offset and its decode runs from there to the body's
// write. Config.TimingsScale multiplies every figure reported (never the delays applied).

// split is one response's queue, prefill and decode, as reported (scaled).
type split struct{ queue, prefill, decode time.Duration }

// acquire waits for a slot (Config.Slots) and sets r.started; it reports false when the
// client left while the request queued. A slot free at once leaves started at the arrival.
func (r *responder) acquire() bool {
	sl := r.s.slots
	if sl == nil {
		return true
	}
	select {
	case sl <- struct{}{}:
		return true
	default:
	}
	r.s.waiting.Add(1)
	defer r.s.waiting.Add(-1)
	select {
	case sl <- struct{}{}:
		r.started = time.Now()
		return true
	case <-r.ctx.Done():
		r.gone = true
		return false
	}
}

// release frees the slot acquire took and the KV cache the request held.
func (r *responder) release() {
	if r.kv != 0 {
		r.s.kvHeld.Add(-r.kv)
		r.kv = 0
	}
	if r.s.slots != nil {
		<-r.s.slots
	}
}

// holdKV adds n tokens to what the request holds of the KV cache (Config.KVCacheTokens).
func (r *responder) holdKV(n int) {
	if r.s.cfg.KVCacheTokens > 0 && n > 0 {
		r.kv += int64(n)
		r.s.kvHeld.Add(int64(n))
	}
}

// stamp takes the time of a content write about to happen: the first one's, and the last's
// when last is set. Two clock readings per response, none per token in between.
func (r *responder) stamp(last bool) {
	if !r.firstAt.IsZero() && !last {
		return
	}
	now := time.Now()
	if r.firstAt.IsZero() {
		r.firstAt = now
	}
	if last {
		r.lastAt = now
	}
}

// step advances the schedule to token i of cp, the one choice of a response, and when a chunk
// of it ends there (n tokens, Config.TokensPerChunk or fewer; 0 when none ends at i) waits
// until it is due and stamps its write. ok is false when the client left.
func (r *responder) step(i int, cp *choicePlan) (at time.Time, n int, ok bool) {
	at = r.started.Add(r.sched.advance())
	if n, _ = chunkEnding(i, cp, r.s.cfg.TokensPerChunk); n == 0 {
		return at, 0, true
	}
	if !r.wait(at) {
		return at, n, false
	}
	r.stamp(i == cp.tokens-1)
	r.holdKV(n)
	return at, n, true
}

// waitLast advances the schedule to the last token of a non-streaming response, waits until
// it is due and returns that time (zero when the client left). The first token's scheduled
// time stands for the first write.
func (r *responder) waitLast() time.Time {
	var first, last time.Duration
	for i := range r.plan.maxTokens {
		last = r.sched.advance()
		if i == 0 {
			first = last
		}
	}
	at := r.started.Add(last)
	if !r.wait(at) {
		return time.Time{}
	}
	r.firstAt, r.lastAt = r.started.Add(first), time.Now()
	r.holdKV(r.plan.maxTokens)
	return at
}

// split computes the reported split once the last content write was stamped.
func (r *responder) split() split {
	if r.reported != (split{}) {
		return r.reported
	}
	first, last := r.firstAt, r.lastAt
	if first.IsZero() {
		first = r.started
	}
	if last.Before(first) {
		last = first
	}
	k := r.s.cfg.TimingsScale
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * k) }
	r.reported = split{
		queue:   scale(r.started.Sub(r.arrived)),
		prefill: scale(first.Sub(r.started)),
		decode:  scale(last.Sub(first)),
	}
	return r.reported
}

// appendTimings appends llama.cpp's "timings" object (its server's result_timings): prompt_n
// and prompt_ms are the prompt and its prefill, predicted_n and predicted_ms the generated
// tokens and their decode, with the per-token and per-second rates derived from them.
func (r *responder) appendTimings(b []byte, prompt int) []byte {
	sp := r.split()
	n := 0
	for _, cp := range r.plan.choices {
		n = max(n, cp.tokens)
	}
	pms, dms := ms(sp.prefill), ms(sp.decode)
	b = append(b, `"timings":{"cache_n":0,"prompt_n":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"prompt_ms":`...)
	b = appendMs(b, pms)
	b = append(b, `,"prompt_per_token_ms":`...)
	b = appendMs(b, per(pms, prompt))
	b = append(b, `,"prompt_per_second":`...)
	b = appendMs(b, rate(prompt, pms))
	b = append(b, `,"predicted_n":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"predicted_ms":`...)
	b = appendMs(b, dms)
	b = append(b, `,"predicted_per_token_ms":`...)
	b = appendMs(b, per(dms, n))
	b = append(b, `,"predicted_per_second":`...)
	b = appendMs(b, rate(n, dms))
	return append(b, '}')
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func per(total float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return total / float64(n)
}

func rate(n int, totalMs float64) float64 {
	if totalMs <= 0 {
		return 0
	}
	return float64(n) / totalMs * 1e3
}

func appendMs(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', 3, 64) }

// splitBounds are vLLM's buckets for its request-phase histograms (vllm/v1/metrics: the
// request latency buckets), in seconds.
var splitBounds = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}

// hist is one classic histogram.
type hist struct {
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
	n      uint64
}

func (h *hist) observe(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, len(splitBounds)+1)
	}
	s := d.Seconds()
	i := 0
	for i < len(splitBounds) && s > splitBounds[i] {
		i++
	}
	h.counts[i]++
	h.sum += s
	h.n++
}

// splitMetrics are the /metrics histograms of the responses the mock completed.
type splitMetrics struct {
	mu                     sync.Mutex
	queue, prefill, decode hist
}

func (m *splitMetrics) observe(sp split) {
	m.mu.Lock()
	m.queue.observe(sp.queue)
	m.prefill.observe(sp.prefill)
	m.decode.observe(sp.decode)
	m.mu.Unlock()
}

// serveMetrics answers GET /metrics with a page in vLLM's names and label (model_name, the
// configured model): vllm:request_queue_time_seconds, vllm:request_prefill_time_seconds and
// vllm:request_decode_time_seconds (one observation per completed response, Config.TimingsScale
// applied, as every reported figure), vllm:num_requests_running and vllm:num_requests_waiting,
// and vllm:kv_cache_usage_perc with Config.KVCacheTokens.
func (s *Server) serveMetrics(w http.ResponseWriter) {
	lbl := `model_name=` + string(appendJSONString(nil, s.cfg.Model))
	b := make([]byte, 0, 4096)
	gauge := func(name, help string, v int64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" gauge\n"+name+"{"+lbl+"} "...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	waiting := s.waiting.Load()
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", s.inFlight.Load()-waiting)
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", waiting)
	if c := s.cfg.KVCacheTokens; c > 0 {
		b = append(b, "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{"+lbl+"} "...)
		b = strconv.AppendFloat(b, float64(s.kvHeld.Load())/float64(c), 'g', -1, 64)
		b = append(b, '\n')
	}
	s.metrics.mu.Lock()
	for _, x := range []struct {
		name, help string
		h          *hist
	}{
		{"vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", &s.metrics.queue},
		{"vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", &s.metrics.prefill},
		{"vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", &s.metrics.decode},
	} {
		b = append(b, "# HELP "+x.name+" "+x.help+"\n# TYPE "+x.name+" histogram\n"...)
		var cum uint64
		for i := range len(splitBounds) + 1 {
			if x.h.counts != nil {
				cum += x.h.counts[i]
			}
			le := "+Inf"
			if i < len(splitBounds) {
				le = strconv.FormatFloat(splitBounds[i], 'g', -1, 64)
			}
			b = append(b, x.name+`_bucket{le="`+le+`",`+lbl+"} "...)
			b = strconv.AppendUint(b, cum, 10)
			b = append(b, '\n')
		}
		b = append(b, x.name+"_sum{"+lbl+"} "...)
		b = strconv.AppendFloat(b, x.h.sum, 'g', -1, 64)
		b = append(b, "\n"+x.name+"_count{"+lbl+"} "...)
		b = strconv.AppendUint(b, x.h.n, 10)
		b = append(b, '\n')
	}
	s.metrics.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b)
}
