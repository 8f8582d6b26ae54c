package stats

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

func TestParseSLOs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []SLO
	}{
		{"no objectives is not an error", "", nil},
		{"AIPerf's documented example", "time_to_first_token:100 inter_token_latency:3.4",
			[]SLO{{TagTTFT, 100}, {TagITL, 3.4}}},
		{"commas and repeated spaces separate too", " request_latency:2000,, output_token_throughput_per_user:25 ",
			[]SLO{{TagRequestLatency, 2000}, {TagPerUserThroughput, 25}}},
		{"llmtap's own metric and exponents are accepted", "headers_latency:1e3",
			[]SLO{{TagHeadersLatency, 1000}}},
		{"zero is a valid threshold", "time_to_second_token:0", []SLO{{TagTTST, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSLOs(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseSLOsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		wants []string // substrings of the error
	}{
		{"an unknown tag names the known ones", "ttft:100", []string{`unknown metric "ttft"`, "time_to_first_token"}},
		{"a value that is not a number", "time_to_first_token:fast", []string{`value "fast" is not a number`}},
		{"an empty value", "time_to_first_token:", []string{`value "" is not a number`}},
		{"a pair without colon", "time_to_first_token=100", []string{"want metric:value"}},
		{"a negative threshold", "request_latency:-1", []string{"finite number ≥ 0"}},
		{"NaN is no threshold", "request_latency:NaN", []string{"finite number ≥ 0"}},
		{"infinity is no threshold", "request_latency:+Inf", []string{"finite number ≥ 0"}},
		{"a per-chunk metric has no single value per request", "inter_chunk_latency:5", []string{"cannot be an objective"}},
		{"a metric given twice is ambiguous", "request_latency:1 request_latency:2", []string{"given twice"}},
		{"every problem is reported at once", "foo:1 time_to_first_token:x", []string{`unknown metric "foo"`, `value "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSLOs(tt.in)
			if err == nil {
				t.Fatalf("no error, got %v", got)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestGood(t *testing.T) {
	t.Parallel()
	base := func() *record.Record { return streamRecord("m", record.ClassLive, t0, 100, 10, 11) } // ITL 10 ms, 100 tok/s/user
	reasoning := func() *record.Record { r := base(); r.ReasoningTokens = 4; return r }
	tests := []struct {
		name string
		r    func() *record.Record
		slos string
		want bool
	}{
		{"meets every objective", base, "time_to_first_token:150 inter_token_latency:12", true},
		{"a value equal to its threshold meets it", base, "time_to_first_token:100", true},
		{"one objective missed is enough to fail", base, "time_to_first_token:150 inter_token_latency:9", false},
		{"larger-is-better metrics compare with >=", base, "output_token_throughput_per_user:100", true},
		{"a per-user throughput below its floor fails", base, "output_token_throughput_per_user:101", false},
		// AIPerf's output_token_count (11 generated, 4 of them reasoning: 7) is larger-is-better.
		{"an output token count compares with >=", reasoning, "output_token_count:7", true},
		{"an output token count leaves reasoning out", reasoning, "output_token_count:8", false},
		{"an output sequence length counts reasoning", reasoning, "output_sequence_length:11", true},
		{"an input length compares with >=", base, "input_sequence_length:50", true},
		{"a failed request is never good", func() *record.Record { r := base(); r.Error = record.ErrCanceled; return r },
			"time_to_first_token:150", false},
		{"a missing value cannot be shown to meet its objective", func() *record.Record { r := base(); r.TTFTMs = nil; return r },
			"time_to_first_token:150", false},
		{"no objectives make every successful request good", base, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slos, err := ParseSLOs(tt.slos)
			if err != nil {
				t.Fatal(err)
			}
			if got := Good(tt.r(), slos); got != tt.want {
				t.Fatalf("Good = %v, want %v", got, tt.want)
			}
		})
	}
	if Good(base(), []SLO{{"no_such_metric", 1}}) {
		t.Error("an SLO on an unknown metric must not pass")
	}
}

func TestGoodputInSummary(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	slos, err := ParseSLOs("time_to_first_token:100")
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Now: clk.Now, SLOs: slos})
	// Two good requests, one slow one, one failure; the valid ones span 9 s (AIPerf's
	// benchmark duration is over valid requests).
	for i, ttft := range []float64{50, 100, 150, 50} {
		r := streamRecord("m", record.ClassLive, t0.Add(time.Duration(i)*time.Second), ttft, 10, 3)
		r.DurationMs = 7000
		if i == 3 {
			r.Error = record.ErrStream
		}
		a.Add(r)
	}
	s := a.Summary()
	g, _ := s.Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	want := map[string]float64{
		TagGoodRequestCount: 2,
		TagGoodput:          2.0 / 9,
		TagGoodRequestFrac:  0.5, // errors count as attempts
	}
	for tag, v := range want {
		if got := g.Scalars[tag].Value; !near(got, v, 1e-12, 0) {
			t.Errorf("%s = %v, want %v", tag, got, v)
		}
	}
	if len(s.SLOs) != 1 || s.SLOs[0].String() != "time_to_first_token<=100" {
		t.Errorf("summary SLOs %v", s.SLOs)
	}
	noSLO := New(Options{Now: clk.Now})
	noSLO.Add(streamRecord("m", record.ClassLive, t0, 50, 10, 3))
	g, _ = noSLO.Summary().Find(Key{"m", record.ClassLive, "2xx"}, WindowCumulative)
	if _, ok := g.Scalars[TagGoodput]; ok {
		t.Error("goodput reported without SLOs")
	}
}

func FuzzParseSLOs(f *testing.F) {
	for _, s := range []string{
		"", "time_to_first_token:100 inter_token_latency:3.4", "ttft:1", "request_latency:-1",
		"a:b:c", ",,, :", "output_token_throughput_per_user:1e400", "headers_latency:0x1p-2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slos, err := ParseSLOs(s)
		if err != nil {
			return
		}
		// What parses round-trips through the CLI syntax and names only usable metrics.
		var parts []string
		for _, o := range slos {
			m, ok := metricByTag(o.Metric)
			if !ok || specs[m].list || o.Threshold < 0 {
				t.Fatalf("accepted %v", o)
			}
			parts = append(parts, o.Metric+":"+strings.TrimPrefix(strings.TrimPrefix(o.String(), o.Metric+"<="), o.Metric+">="))
		}
		again, err := ParseSLOs(strings.Join(parts, " "))
		if err != nil || !reflect.DeepEqual(again, slos) {
			t.Fatalf("round trip of %q: %v %v, want %v", s, again, err, slos)
		}
	})
}
