package shadow

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
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/record"
)

// validSpec is a synthetic load Build accepts.
func validSpec() workload.Spec {
	return workload.Spec{Name: "s", URL: "http://127.0.0.1:9/v1/chat/completions", Model: "m", Rate: 2, Entries: 3}
}

// TestBuildSynthetic is the corpus step: Entries bodies of the configured model, marked as
// shadow traffic under the load's name, and the model required.
func TestBuildSynthetic(t *testing.T) {
	s := validSpec()
	var marks []string
	mark := func(h http.Header, class, name string) { marks = append(marks, class+"/"+name) }
	s.Headers = map[string]string{"authorization": "Bearer x"}
	c, err := Build(s, mark)
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
	if c.Source.Header.Get("Authorization") != "Bearer x" || c.Seed != workload.DefaultSeed || c.Arrival.Rate != 2 {
		t.Errorf("config %+v, header %v", c, c.Source.Header)
	}
	c.Source.Mark(http.Header{})
	if len(marks) != 1 || marks[0] != record.ClassShadow+"/s" {
		t.Errorf("marks %v, want one %s/s", marks, record.ClassShadow)
	}
	s.Model = ""
	if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), "model is required") {
		t.Errorf("a synthetic load without a model: %v", err)
	}
	s = validSpec()
	s.ISLStddev = -1
	if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), "isl/osl") {
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
	s.Trace = &workload.TraceSpec{File: file, Format: "payloads"}
	var class string
	c, err := Build(s, func(_ http.Header, c, _ string) { class = c })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Trace) != 2 || c.Trace[0] != 0 || c.Trace[1] != 250*time.Millisecond || c.Speedup != workload.DefaultSpeedup {
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
		trace workload.TraceSpec
		want  string
	}{
		{workload.TraceSpec{}, "a file is required"},
		{workload.TraceSpec{File: file, Format: "nope"}, "trace:"},
		{workload.TraceSpec{File: filepath.Join(dir, "missing")}, "reading the trace"},
	} {
		s.Trace = &tt.trace
		if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
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
	c, err := Build(validSpec(), nil)
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
	c := config(s.WithDefaults())
	if c.Arrival.Rate != 80 || c.MaxRate != 100 {
		t.Errorf("a third of rate 240 and max_rate 300: %v and %v", c.Arrival.Rate, c.MaxRate)
	}
	if c.Seed == s.WithDefaults().Seed || c.Seed != config(s.WithDefaults()).Seed {
		t.Errorf("shared seed %d: want it salted (not %d) and the same on every build", c.Seed, s.WithDefaults().Seed)
	}
	s.Share = 1
	if c := config(s.WithDefaults()); c.Arrival.Rate != 240 || c.Seed != s.WithDefaults().Seed {
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
	s.Trace = &workload.TraceSpec{File: file}
	if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), "limits.MaxPoolTokens") {
		t.Errorf("trace: %v", err)
	}
	s = validSpec()
	s.Entries = limits.MaxEntries + 1
	if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), "limits.MaxEntries") {
		t.Errorf("entries: %v", err)
	}
	s = validSpec()
	s.ISL = 1e12
	if _, err := Build(s, nil); err == nil || !strings.Contains(err.Error(), "limits.MaxTokens") {
		t.Errorf("isl: %v", err)
	}
}
