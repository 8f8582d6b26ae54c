package gen

import (
	"flag"
	"testing"
)

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
