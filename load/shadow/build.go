package shadow

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"

	"github.com/llmtap/llmtap/internal/limits"
)

// Build turns s into a runner's config: its defaults, its checks (workload.Spec.Validate, every
// problem at once), its request bodies (cut from the embedded corpus, or read from the trace)
// and a readiness probe that waits until the URL's host accepts connections. Steps that read
// files or build bodies run only once the fields are valid. mark, when set, marks each
// request's header with the class it is measured as (record.ClassShadow, record.ClassReplay
// for a trace) and the load's name. The config is returned even with an error, so a caller can
// see what was built.
func Build(s workload.Spec, mark func(h http.Header, class, name string)) (Config, error) {
	s = s.WithDefaults()
	c := config(s)
	if err := s.Validate(); err != nil {
		return c, err
	}
	body, _ := s.Body() // checked by Validate
	corpus, err := workload.DefaultCorpus()
	if err != nil {
		return c, err
	}
	header := http.Header{}
	for k, v := range s.Headers {
		header.Set(k, v)
	}
	src := &Source{URL: s.URL, Header: header}
	class := record.ClassShadow
	if s.Trace != nil {
		class = record.ClassReplay
		if c.Trace, src.Bodies, err = traceBodies(s.Trace, body, corpus); err != nil {
			return c, err
		}
	} else {
		lengths, _ := s.Lengths() // checked by Validate
		syn := &workload.Synthetic{Corpus: corpus, Lengths: lengths, Spec: body, Seed: s.Seed}
		if src.Bodies, err = syn.Bodies(s.Entries); err != nil {
			return c, err
		}
	}
	if mark != nil {
		name := s.Name
		src.Mark = func(h http.Header) { mark(h, class, name) }
	}
	u, _ := url.Parse(s.URL) // checked by Validate
	c.Ready = DialProbe(u)
	src.Key = fmt.Sprintf("%s|%v|%v", s.URL, s.Headers, len(src.Bodies))
	c.Source = src
	return c, c.Validate()
}

// processSalt is ProcessSalt's value, drawn on first use.
var processSalt = sync.OnceValue(func() uint64 {
	var b [8]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		return uint64(time.Now().UnixNano())
	}
	return binary.LittleEndian.Uint64(b[:])
})

// ProcessSalt is a random value drawn once per process: what sets the arrivals of a shared
// load (workload.Spec.Share) apart from those of the other instances that run the same
// config, while a config reload in the same process keeps them.
func ProcessSalt() uint64 { return processSalt() }

// config returns the runner's config of a defaulted spec, without its source. Fields that fail
// to parse are left unset (Validate reports them).
func config(s workload.Spec) Config {
	c := Config{
		Name: s.Name, Seed: s.Seed, MaxRate: s.MaxRate, MaxInFlight: s.MaxInFlight,
		StartAfter: time.Duration(s.StartAfter), Duration: time.Duration(s.Duration),
		Arrival: s.Arrivals(),
	}
	if s.Window != "" {
		c.Window, _ = gen.ParseWindow(s.Window)
	}
	if s.Share > 1 {
		c.Arrival.Rate /= float64(s.Share)
		c.MaxRate /= float64(s.Share)
		c.Seed ^= ProcessSalt()
	}
	if t := s.Trace; t != nil {
		c.Speedup = t.Speedup
	}
	if h := s.Headroom; h != nil {
		slos, _ := stats.ParseSLOs(h.SLO)
		c.Headroom = &HeadroomConfig{Start: h.Start, Step: h.Step, Max: h.Max, StepDuration: time.Duration(h.StepDuration),
			SLOs: slos, Attainment: h.Attainment, MinLive: h.MinLive}
	}
	return c
}

// traceBodies reads the trace (checked by Validate) and returns its timestamps (from its first
// request) and one body per request: a payload verbatim, otherwise a synthetic prompt of the
// recorded input length. A body spec without a model takes the first model the trace names.
func traceBodies(t *workload.TraceSpec, body workload.BodySpec, corpus *workload.Corpus) ([]time.Duration, [][]byte, error) {
	format, _ := trace.ParseFormat(t.Format)
	reqs, _, err := trace.ReadSorted(t.File, trace.Options{Format: format}, t.MaxRequests)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the trace: %w", err)
	}
	if len(reqs) == 0 {
		return nil, nil, fmt.Errorf("trace %s has no requests", t.File)
	}
	if body.Model == "" {
		body.Model = trace.Model(reqs)
	}
	tokens := 0
	for i := range reqs {
		if reqs[i].Payload == nil {
			if tokens += reqs[i].InputLength; tokens > limits.MaxPoolTokens {
				return nil, nil, fmt.Errorf("trace %s: the prompts of its first %d requests hold more than %d tokens, the limit built in memory (limits.MaxPoolTokens); use max_requests or a shorter trace", t.File, i+1, limits.MaxPoolTokens)
			}
		}
	}
	at := make([]time.Duration, len(reqs))
	bodies := make([][]byte, len(reqs))
	for i := range reqs {
		q := &reqs[i]
		at[i] = q.Timestamp - reqs[0].Timestamp
		if q.Payload != nil {
			bodies[i] = q.Payload
			continue
		}
		if bodies[i], err = body.TraceBody(corpus, q.InputLength, q.OutputLength, q.HashIDs, i); err != nil {
			return nil, nil, err
		}
	}
	return at, bodies, nil
}

// DialProbe returns a Config.Ready that reports whether u's host accepts a TCP connection
// (within 200 ms). In the proxy, Caddy starts its apps in no fixed order, so a load waits
// until the route's listener accepts.
func DialProbe(u *url.URL) func() bool {
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return func() bool {
		conn, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	}
}
