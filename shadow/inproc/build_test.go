package inproc

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"fmt"
	"github.com/llmtap/llmtap/internal/limits"
	"github.com/llmtap/llmtap/shadow/workload"
	"github.com/llmtap/llmtap/telemetry/record"
)

// validSpec is a synthetic load Build accepts.
func validSpec() Spec {
	return Spec{Name: "s", URL: "http://127.0.0.1:9/v1/chat/completions", Model: "m", Rate: 2, Entries: 3}
}

// TestSpecDefaults is the defaults step: every zero value with a default gets it, set values
// are kept, and the caller's trace and headroom are not changed through their pointers.
func TestSpecDefaults(t *testing.T) {
	in := Spec{Trace: &TraceSpec{File: "f"}, Headroom: &HeadroomSpec{Start: 1}}
	d := in.withDefaults()
	if d.EndpointType != workload.EndpointChat || d.Seed != DefaultSeed || d.ISL != DefaultISL || d.Entries != DefaultEntries ||
		d.Trace.Speedup != DefaultSpeedup || d.Headroom.StepDuration != DefaultHeadroomStepTime {
		t.Errorf("defaults of a zero spec = %+v (trace %+v, headroom %+v)", d, *d.Trace, *d.Headroom)
	}
	if in.Trace.Speedup != 0 || in.Headroom.StepDuration != 0 {
		t.Errorf("withDefaults changed the caller's trace or headroom: %+v %+v", *in.Trace, *in.Headroom)
	}
	set := Spec{EndpointType: workload.EndpointMessages, Seed: 7, ISL: 10, Entries: 2,
		Trace: &TraceSpec{Speedup: 3}, Headroom: &HeadroomSpec{StepDuration: time.Second}}.withDefaults()
	if set.EndpointType != workload.EndpointMessages || set.Seed != 7 || set.ISL != 10 || set.Entries != 2 ||
		set.Trace.Speedup != 3 || set.Headroom.StepDuration != time.Second {
		t.Errorf("withDefaults replaced set values: %+v", set)
	}
}

// TestSpecValidate is the validation step: each bad field is reported, and all of them at
// once.
func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Spec)
		want string // "" = valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"no name", func(s *Spec) { s.Name = "" }, `name ""`},
		{"a slash in the name would break the admin routes", func(s *Spec) { s.Name = "a/b" }, `name "a/b"`},
		{"no url", func(s *Spec) { s.URL = "" }, `url ""`},
		{"not http", func(s *Spec) { s.URL = "ftp://h/x" }, `url "ftp://h/x"`},
		{"no host", func(s *Spec) { s.URL = "http:///x" }, `url "http:///x"`},
		{"bad extra", func(s *Spec) { s.Extra = []string{"novalue"} }, "novalue"},
		{"unknown endpoint", func(s *Spec) { s.EndpointType = "fax" }, "fax"},
		{"bad window", func(s *Spec) { s.Window = "25:00-01:00" }, "window"},
		{"bad slo", func(s *Spec) { s.Rate = 0; s.Headroom = &HeadroomSpec{SLO: "nonsense"} }, "headroom slo"},
		{"rate beside headroom", func(s *Spec) { s.Headroom = &HeadroomSpec{SLO: "time_to_first_token:500"} }, "not rate"},
		{"negative share", func(s *Spec) { s.Share = -1 }, "share -1"},
		{"a share of constant arrivals is a burst", func(s *Spec) { s.Share = 3; s.Arrival = "constant" }, "share needs poisson"},
		{"a share of a trace", func(s *Spec) { s.Share = 3; s.Trace = &TraceSpec{File: "t"} }, "synthetic load"},
		{"share", func(s *Spec) { s.Share = 3; s.Arrival = "poisson" }, ""},
	}
	for _, tt := range tests {
		s := validSpec()
		tt.edit(&s)
		_, err := s.withDefaults().validate()
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
	bad := Spec{Name: "a b", URL: "nope", Window: "x"}
	_, err := bad.withDefaults().validate()
	if err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("three bad fields gave %v; want the three problems at once", err)
	}
}

// TestBuildSynthetic is the corpus step: Entries bodies of the configured model, marked as
// shadow traffic under the load's name, and the model required.
func TestBuildSynthetic(t *testing.T) {
	s := validSpec()
	var marks []string
	s.Mark = func(h http.Header, class, name string) { marks = append(marks, class+"/"+name) }
	s.Headers = map[string]string{"authorization": "Bearer x"}
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Source.Bodies) != 3 {
		t.Fatalf("%d bodies, want the 3 entries", len(c.Source.Bodies))
	}
	for _, b := range c.Source.Bodies {
		var body struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Model != "m" || !body.Stream {
			t.Errorf("body %s: model %q stream %v (%v); want model m, streamed", b, body.Model, body.Stream, err)
		}
	}
	if c.Source.Header.Get("Authorization") != "Bearer x" || c.Seed != DefaultSeed || c.Arrival.Rate != 2 {
		t.Errorf("config %+v, header %v", c, c.Source.Header)
	}
	c.Source.Mark(http.Header{})
	if len(marks) != 1 || marks[0] != record.ClassShadow+"/s" {
		t.Errorf("marks %v, want one %s/s", marks, record.ClassShadow)
	}
	s.Model = ""
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "model is required") {
		t.Errorf("a synthetic load without a model: %v", err)
	}
	s = validSpec()
	s.ISLStddev = -1
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "isl/osl") {
		t.Errorf("a negative isl_stddev: %v", err)
	}
}

// TestBuildTrace is the trace step: one body per request (payloads verbatim), timestamps from
// the first request, the default speedup, class replay.
func TestBuildTrace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "payloads.jsonl")
	lines := `{"timestamp_ms":1000,"request_id":"a","path":"/v1/chat/completions","payload":{"model":"tm","messages":[]}}
{"timestamp_ms":1250,"request_id":"b","path":"/v1/chat/completions","payload":{"model":"tm","messages":[{"role":"user","content":"hi"}]}}
`
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	s := validSpec()
	s.Rate, s.Model = 0, ""
	s.Trace = &TraceSpec{File: file, Format: "payloads"}
	var class string
	s.Mark = func(_ http.Header, c, _ string) { class = c }
	c, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Trace) != 2 || c.Trace[0] != 0 || c.Trace[1] != 250*time.Millisecond || c.Speedup != DefaultSpeedup {
		t.Errorf("trace %v speedup %v; want [0 250ms] at 1", c.Trace, c.Speedup)
	}
	if len(c.Source.Bodies) != 2 || !bytes.Contains(c.Source.Bodies[1], []byte(`"hi"`)) {
		t.Errorf("bodies %q; want the two payloads verbatim", c.Source.Bodies)
	}
	c.Source.Mark(http.Header{})
	if class != record.ClassReplay {
		t.Errorf("a trace load is marked %q, want %q", class, record.ClassReplay)
	}
	for _, tt := range []struct {
		trace TraceSpec
		want  string
	}{
		{TraceSpec{}, "a file is required"},
		{TraceSpec{File: file, Format: "nope"}, "trace:"},
		{TraceSpec{File: filepath.Join(dir, "missing")}, "reading the trace"},
	} {
		s.Trace = &tt.trace
		if _, err := Build(s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("trace %+v: %v, want %q", tt.trace, err, tt.want)
		}
	}
}

// TestDialProbe is the readiness step: ready once the host accepts connections, not before.
func TestDialProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://" + ln.Addr().String() + "/v1")
	ready := DialProbe(u)
	if !ready() {
		t.Error("a listening host is not ready")
	}
	ln.Close()
	if ready() {
		t.Error("a closed listener is ready")
	}
	c, err := Build(validSpec())
	if err != nil || c.Ready == nil {
		t.Fatalf("Build set no readiness probe (%v)", err)
	}
}

// TestSpecShare: a share divides the rates and salts the arrival seed with the process's
// value, the same on every build in the process (a reload keeps the arrivals) and different
// from the unshared seed; the bodies keep the configured seed.
func TestSpecShare(t *testing.T) {
	s := validSpec()
	s.Rate, s.MaxRate, s.Share = 240, 300, 3
	c := s.withDefaults().config()
	if c.Arrival.Rate != 80 || c.MaxRate != 100 {
		t.Errorf("a third of rate 240 and max_rate 300: %v and %v", c.Arrival.Rate, c.MaxRate)
	}
	if c.Seed == s.withDefaults().Seed || c.Seed != s.withDefaults().config().Seed {
		t.Errorf("shared seed %d: want it salted (not %d) and the same on every build", c.Seed, s.withDefaults().Seed)
	}
	s.Share = 1
	if c := s.withDefaults().config(); c.Arrival.Rate != 240 || c.Seed != s.withDefaults().Seed {
		t.Errorf("share 1 is the whole load: rate %v seed %d", c.Arrival.Rate, c.Seed)
	}
}

// TestBuildRefusesHostileSizes: a trace whose prompts add up past limits.MaxPoolTokens (33
// rows of 2 Mi tokens: the 1e8-token rows that held the proxy at 2.7 GB for 15–20 s are
// refused by the reader already), entries past limits.MaxEntries and an isl past
// limits.MaxTokens are refused before any body is built.
func TestBuildRefusesHostileSizes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "big.jsonl")
	var b strings.Builder
	for i := range limits.MaxPoolTokens/limits.MaxTokens + 1 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 1, "model": "m"}`+"\n", i, limits.MaxTokens)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s := validSpec()
	s.Rate = 0
	s.Trace = &TraceSpec{File: file}
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "limits.MaxPoolTokens") {
		t.Errorf("trace: %v", err)
	}
	s = validSpec()
	s.Entries = limits.MaxEntries + 1
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "limits.MaxEntries") {
		t.Errorf("entries: %v", err)
	}
	s = validSpec()
	s.ISL = 1e12
	if _, err := Build(s); err == nil || !strings.Contains(err.Error(), "limits.MaxTokens") {
		t.Errorf("isl: %v", err)
	}
}
