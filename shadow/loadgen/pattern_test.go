package loadgen

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseArrivalSpec(t *testing.T) {
	cases := []struct {
		name, pattern, rate, smooth string
		want                        string // the Arrivals type, or "" for an error
		errs                        []string
	}{
		{"default pattern is poisson, as in AIPerf", "", "10", "", "*loadgen.Poisson", nil},
		{"constant", "constant", "2.5", "", "*loadgen.Constant", nil},
		{"case and spaces are forgiven", " Gamma ", " 10 ", " 0.25 ", "*loadgen.Gamma", nil},
		{"gamma without smoothness is k=1", "gamma", "10", "", "*loadgen.Gamma", nil},
		{"smoothness 1 is the default, so harmless anywhere", "poisson", "10", "1", "*loadgen.Poisson", nil},
		{"fractional rate", "poisson", "0.01", "", "*loadgen.Poisson", nil},
		{"unknown pattern", "uniform", "10", "", "", []string{`arrival pattern "uniform"`}},
		{"missing rate", "poisson", "", "", "", []string{`request rate "" is not a number`}},
		{"zero rate never sends", "poisson", "0", "", "", []string{"request rate 0 must be"}},
		{"negative rate", "constant", "-5", "", "", []string{"request rate -5"}},
		{"infinite rate", "constant", "Inf", "", "", []string{"request rate +Inf"}},
		{"NaN rate", "constant", "NaN", "", "", []string{"request rate NaN"}},
		{"rate with a unit", "poisson", "10/s", "", "", []string{`request rate "10/s"`}},
		{"zero smoothness is read as the default", "gamma", "1", "0", "*loadgen.Gamma", nil},
		{"negative smoothness", "gamma", "1", "-2", "", []string{"arrival smoothness -2"}},
		{"infinite smoothness", "gamma", "1", "+Inf", "", []string{"arrival smoothness +Inf"}},
		{"smoothness would be silently ignored", "poisson", "10", "0.5", "", []string{`applies only to the gamma arrival pattern, not "poisson"`}},
		{"every problem at once", "bursty", "x", "y", "", []string{`rate "x"`, `smoothness "y"`}},
		{"every validation problem at once", "bursty", "-1", "-1", "", []string{`pattern "bursty"`, "rate -1", "smoothness -1"}},
	}
	for _, c := range cases {
		spec, err := ParseArrivalSpec(c.pattern, c.rate, c.smooth)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: no error for %+v", c.name, spec)
				continue
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not mention %q", c.name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		a, err := spec.New(seeded(1))
		if err != nil {
			t.Errorf("%s: New: %v", c.name, err)
			continue
		}
		if got := fmt.Sprintf("%T", a); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestArrivalSpecFlags(t *testing.T) {
	// The flags and AIPerf's aliases write the same fields; the last one given wins.
	cases := []struct {
		args []string
		want ArrivalSpec
		why  string
	}{
		{nil, ArrivalSpec{Pattern: "poisson", Smoothness: 1}, "defaults come from the spec"},
		{[]string{"--arrival-pattern", "gamma", "--request-rate", "12.5", "--arrival-smoothness", "0.25"},
			ArrivalSpec{"gamma", 12.5, 0.25}, "AIPerf's names"},
		{[]string{"--request-rate-mode=constant", "--request-rate=3", "--vllm-burstiness=1"},
			ArrivalSpec{"constant", 3, 1}, "the aliases"},
	}
	for _, c := range cases {
		spec := ArrivalSpec{Pattern: "poisson", Smoothness: 1}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		spec.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		if spec != c.want {
			t.Errorf("%s: got %+v, want %+v", c.why, spec, c.want)
		}
	}
}

func FuzzParseArrivalSpec(f *testing.F) {
	// Whatever the strings: either an error, or a process whose first arrivals are valid
	// non-decreasing offsets.
	f.Add("poisson", "10", "")
	f.Add("gamma", "1e-300", "1e300")
	f.Add("gamma", "1e300", "1e-300")
	f.Add("constant", "0x1p-1074", "")
	f.Add("GAMMA", " 5 ", "0.001")
	f.Fuzz(func(t *testing.T, pattern, rate, smooth string) {
		spec, err := ParseArrivalSpec(pattern, rate, smooth)
		if err != nil {
			return
		}
		a, err := spec.New(seeded(1))
		if err != nil {
			t.Fatalf("ParseArrivalSpec accepted %+v but New refused it: %v", spec, err)
		}
		var prev time.Duration
		for range 100 {
			at := a.Next()
			if at < prev {
				t.Fatalf("%+v: arrival at %v after %v", spec, at, prev)
			}
			prev = at
		}
	})
}
