package inproc

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmtap/llmtap/shadow/loadgen"
	"github.com/llmtap/llmtap/shadow/trace"
	"github.com/llmtap/llmtap/shadow/workload"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/stats"

	"github.com/llmtap/llmtap/internal/limits"
)

// Spec is a shadow load as its user writes it (in the proxy, the llmtap app's ShadowConfig
// without Caddy's types); Build turns it into a runner's Config. The fields mean what the
// proxy's documentation of the shadow option says; a zero value means its default.
type Spec struct {
	Name, URL, Model, EndpointType string
	Rate                           float64
	Arrival                        string
	Smoothness                     float64
	ISL, ISLStddev, OSL, OSLStddev float64
	// Extra are AIPerf --extra-inputs members ("key:value", or a JSON object).
	Extra []string
	// Streaming nil means streamed.
	Streaming            *bool
	Headers              map[string]string
	Seed                 uint64
	Entries              int
	StartAfter, Duration time.Duration
	// Window is "HH:MM-HH:MM" UTC, or empty for always.
	Window      string
	MaxInFlight int
	MaxRate     float64
	// Share, above 1, makes this load one of Share equal shares of a fleet-wide load: Rate
	// and MaxRate are divided by it and the arrivals are seeded from Seed and a value drawn
	// once per process (ProcessSalt), so N instances with the same config send N independent
	// Poisson processes whose sum is one Poisson process of rate Rate. Poisson only.
	Share    int
	Trace    *TraceSpec
	Headroom *HeadroomSpec
	// Mark, when set, marks each request's header with the class it is measured as
	// (record.ClassShadow, record.ClassReplay for a trace) and the load's name.
	Mark func(h http.Header, class, name string)
}

// TraceSpec replays a trace file (any format shadow/trace reads) instead of synthetic load.
type TraceSpec struct {
	File        string
	Speedup     float64
	Format      string
	MaxRequests int
}

// HeadroomSpec makes the load a headroom probe; SLO is AIPerf goodput metric:value pairs.
type HeadroomSpec struct {
	Start, Step, Max float64
	StepDuration     time.Duration
	SLO              string
	Attainment       float64
	MinLive          int
}

// Defaults of a Spec's zero values (DefaultEntries and DefaultMaxInFlight are the runner's).
const (
	DefaultSeed             = 42
	DefaultISL              = 550
	DefaultSpeedup          = 1
	DefaultHeadroomStepTime = 30 * time.Second
)

// Build turns s into a runner's config: its defaults, its checks (every problem of the
// fields at once), its request bodies (cut from the embedded corpus, or read from the trace)
// and a readiness probe that waits until the URL's host accepts connections. Steps that read
// files or build bodies run only once the fields are valid. The config is returned even with
// an error, so a caller can see what was built.
func Build(s Spec) (Config, error) {
	s = s.withDefaults()
	body, err := s.validate()
	c := s.config()
	if err != nil {
		return c, err
	}
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
		if c.Trace, src.Bodies, err = s.Trace.bodies(body, corpus); err != nil {
			return c, err
		}
	} else if src.Bodies, err = s.synthetic(body, corpus); err != nil {
		return c, err
	}
	if s.Mark != nil {
		mark, name := s.Mark, s.Name
		src.Mark = func(h http.Header) { mark(h, class, name) }
	}
	u, _ := url.Parse(s.URL) // checked by validate
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
// load (Spec.Share) apart from those of the other instances that run the same config, while a
// config reload in the same process keeps them.
func ProcessSalt() uint64 { return processSalt() }

// withDefaults returns s with the zero values that have a default replaced by it.
func (s Spec) withDefaults() Spec {
	if s.EndpointType == "" {
		s.EndpointType = workload.EndpointChat
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.ISL == 0 {
		s.ISL = DefaultISL
	}
	if s.Entries <= 0 {
		s.Entries = DefaultEntries
	}
	if t := s.Trace; t != nil && t.Speedup == 0 {
		tt := *t
		tt.Speedup = DefaultSpeedup
		s.Trace = &tt
	}
	if h := s.Headroom; h != nil && h.StepDuration == 0 {
		hh := *h
		hh.StepDuration = DefaultHeadroomStepTime
		s.Headroom = &hh
	}
	return s
}

// validate checks the fields that need no file nor corpus, all at once, and returns the body
// spec the requests are built from.
func (s Spec) validate() (workload.BodySpec, error) {
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, "/ ?#") {
		errs = append(errs, fmt.Errorf("name %q: want a non-empty name without / ? # or spaces", s.Name))
	}
	u, err := url.Parse(s.URL)
	if s.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url %q: want the http:// or https:// URL of a live route through this proxy", s.URL))
	}
	extras, err := workload.ParseExtras(s.Extra)
	if err != nil {
		errs = append(errs, err)
	}
	body := workload.BodySpec{Endpoint: s.EndpointType, Model: s.Model, Stream: s.Streaming == nil || *s.Streaming, Extra: extras}
	if err := body.Validate(); err != nil {
		errs = append(errs, err)
	}
	if s.Entries > limits.MaxEntries {
		errs = append(errs, fmt.Errorf("entries %d: over the limit of %d (limits.MaxEntries)", s.Entries, limits.MaxEntries))
	}
	if err := errors.Join(workload.Normal{Mean: s.ISL, Stddev: s.ISLStddev}.Validate(), workload.Normal{Mean: s.OSL, Stddev: s.OSLStddev}.Validate()); err != nil {
		errs = append(errs, fmt.Errorf("isl/osl: %w", err))
	}
	if s.Window != "" {
		if _, err := ParseWindow(s.Window); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Share < 0 || s.Share > 10000 {
		errs = append(errs, fmt.Errorf("share %d: want 1 to 10000 (0 or 1: the whole load)", s.Share))
	} else if s.Share > 1 {
		if p := strings.ToLower(strings.TrimSpace(s.Arrival)); p != "" && p != loadgen.PatternPoisson {
			errs = append(errs, fmt.Errorf("share needs poisson arrivals, not %q: only independent Poisson shares add up to the same process", s.Arrival))
		}
		if s.Trace != nil || s.Headroom != nil {
			errs = append(errs, errors.New("share applies to a synthetic load, not to a trace replay or a headroom probe"))
		}
	}
	if h := s.Headroom; h != nil {
		if _, err := stats.ParseSLOs(h.SLO); err != nil {
			errs = append(errs, fmt.Errorf("headroom slo: %w", err))
		}
		if s.Rate != 0 {
			errs = append(errs, errors.New("a headroom probe takes its rates from headroom start/step/max, not rate"))
		}
	}
	return body, errors.Join(errs...)
}

// config returns the runner's config of a defaulted spec, without its source. Fields that fail
// to parse are left unset (validate reports them).
func (s Spec) config() Config {
	c := Config{
		Name: s.Name, Seed: s.Seed, MaxRate: s.MaxRate, MaxInFlight: s.MaxInFlight,
		StartAfter: s.StartAfter, Duration: s.Duration,
		Arrival: loadgen.ArrivalSpec{Pattern: s.Arrival, Rate: s.Rate, Smoothness: s.Smoothness},
	}
	if s.Window != "" {
		c.Window, _ = ParseWindow(s.Window)
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
		c.Headroom = &HeadroomConfig{Start: h.Start, Step: h.Step, Max: h.Max, StepDuration: h.StepDuration,
			SLOs: slos, Attainment: h.Attainment, MinLive: h.MinLive}
	}
	return c
}

// synthetic builds the Entries bodies of a synthetic load, with prompts cut from corpus.
func (s Spec) synthetic(body workload.BodySpec, corpus *workload.Corpus) ([][]byte, error) {
	if s.Model == "" {
		return nil, errors.New("model is required")
	}
	lengths := workload.Pair{ISL: workload.Normal{Mean: s.ISL, Stddev: s.ISLStddev}, OSL: workload.Normal{Mean: s.OSL, Stddev: s.OSLStddev}}
	if err := errors.Join(lengths.ISL.Validate(), lengths.OSL.Validate()); err != nil {
		return nil, fmt.Errorf("isl/osl: %w", err)
	}
	syn := &workload.Synthetic{Corpus: corpus, Lengths: lengths, Spec: body, Seed: s.Seed}
	return syn.Bodies(s.Entries)
}

// bodies reads the trace and returns its timestamps (from its first request) and one body per
// request: a payload verbatim, otherwise a synthetic prompt of the recorded input length. A
// body spec without a model takes the first model the trace names.
func (t *TraceSpec) bodies(body workload.BodySpec, corpus *workload.Corpus) ([]time.Duration, [][]byte, error) {
	if t.File == "" {
		return nil, nil, errors.New("trace: a file is required")
	}
	format := trace.FormatAuto
	if t.Format != "" {
		var err error
		if format, err = trace.ParseFormat(t.Format); err != nil {
			return nil, nil, fmt.Errorf("trace: %w", err)
		}
	}
	reqs, _, err := trace.ReadSorted(t.File, trace.Options{Format: format}, t.MaxRequests)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the trace: %w", err)
	}
	if len(reqs) == 0 {
		return nil, nil, fmt.Errorf("trace %s has no requests", t.File)
	}
	if body.Model == "" {
		for _, q := range reqs {
			if q.Model != "" {
				body.Model = q.Model
				break
			}
		}
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
