package workload

import (
	"strings"
	"testing"
	"time"
)

// validSpec is a synthetic load Validate accepts.
func validSpec() Spec {
	return Spec{Name: "s", URL: "http://127.0.0.1:9/v1/chat/completions", Model: "m", Rate: 2, Entries: 3}
}

// TestSpecDefaults is the defaults step: every zero value with a default gets it, set values
// are kept, and the caller's trace and headroom are not changed through their pointers.
func TestSpecDefaults(t *testing.T) {
	in := Spec{Trace: &TraceSpec{File: "f"}, Headroom: &HeadroomSpec{Start: 1}}
	d := in.WithDefaults()
	if d.EndpointType != EndpointChat || d.Seed != DefaultSeed || d.ISL != DefaultISL || d.Entries != DefaultEntries ||
		d.Trace.Speedup != DefaultSpeedup || d.Headroom.StepDuration != Duration(DefaultHeadroomStepTime) {
		t.Errorf("defaults of a zero spec = %+v (trace %+v, headroom %+v)", d, *d.Trace, *d.Headroom)
	}
	if in.Trace.Speedup != 0 || in.Headroom.StepDuration != 0 {
		t.Errorf("WithDefaults changed the caller's trace or headroom: %+v %+v", *in.Trace, *in.Headroom)
	}
	set := Spec{EndpointType: EndpointMessages, Seed: 7, ISL: 10, Entries: 2,
		Trace: &TraceSpec{Speedup: 3}, Headroom: &HeadroomSpec{StepDuration: Duration(time.Second)}}.WithDefaults()
	if set.EndpointType != EndpointMessages || set.Seed != 7 || set.ISL != 10 || set.Entries != 2 ||
		set.Trace.Speedup != 3 || set.Headroom.StepDuration != Duration(time.Second) {
		t.Errorf("WithDefaults replaced set values: %+v", set)
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
		{"a synthetic load needs a model", func(s *Spec) { s.Model = "" }, "model is required"},
		{"a synthetic load needs a rate", func(s *Spec) { s.Rate = 0 }, "request rate 0"},
		{"smoothness of poisson arrivals", func(s *Spec) { s.Smoothness = 3 }, "arrival smoothness 3"},
		{"a negative isl_stddev", func(s *Spec) { s.ISLStddev = -1 }, "isl/osl"},
		{"a trace names its model and sets the pace", func(s *Spec) { s.Model, s.Rate = "", 0; s.Trace = &TraceSpec{File: "t"} }, ""},
		{"a trace without a file", func(s *Spec) { s.Rate = 0; s.Trace = &TraceSpec{} }, "a file is required"},
		{"a trace format", func(s *Spec) { s.Rate = 0; s.Trace = &TraceSpec{File: "t", Format: "fax"} }, "trace:"},
	}
	for _, tt := range tests {
		s := validSpec()
		tt.edit(&s)
		err := s.Validate()
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
	err := bad.Validate()
	if err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("three bad fields gave %v; want the three problems at once", err)
	}
}
