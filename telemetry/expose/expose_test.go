package expose

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/record"
)

func TestTrailerOK(t *testing.T) {
	for _, c := range []struct {
		name         string
		method       string
		major, minor int
		te, cl       string
		want         bool
	}{
		{"h2", "POST", 2, 0, "", "", true},
		{"h1.1 TE trailers", "POST", 1, 1, "gzip, Trailers;q=1", "", true},
		{"h1.1 no TE", "POST", 1, 1, "", "", false},
		{"h1.1 Content-Length", "POST", 1, 1, "trailers", "12", false},
		{"h1.0", "POST", 1, 0, "trailers", "", false},
		{"HEAD", "HEAD", 2, 0, "", "", false},
	} {
		r := &http.Request{Method: c.method, ProtoMajor: c.major, ProtoMinor: c.minor, Header: http.Header{}}
		if c.te != "" {
			r.Header.Set("TE", c.te)
		}
		h := http.Header{}
		if c.cl != "" {
			h.Set("Content-Length", c.cl)
		}
		if got := TrailerOK(r, h); got != c.want {
			t.Errorf("%s: TrailerOK = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestServerTiming(t *testing.T) {
	ttft, itl := 12.5, 3.0
	rec := &record.Record{TTFTMs: &ttft, ITLMs: &itl, DurationMs: 40, OutputTokens: 10, OutputTokensSource: record.SourceUsage}
	if got, want := ServerTiming(rec), `ttft;dur=12.500, itl;dur=3.000, total;dur=40.000, llmtap;desc="out=10 (usage)"`; got != want {
		t.Errorf("ServerTiming = %s, want %s", got, want)
	}
	rec = &record.Record{DurationMs: 5, OutputTokens: 3, OutputTokensSource: record.SourceTokenizer}
	if got, want := ServerTiming(rec), `total;dur=5.000, llmtap;desc="out=unknown"`; got != want {
		t.Errorf("ServerTiming = %s, want %s", got, want)
	}
	// The time split: the figures the server reported, in its order; the others left out.
	prefill, decode, network := 20.0, 30.0, 1.5
	rec = &record.Record{DurationMs: 60, OutputTokensSource: record.SourceNone,
		Split: &record.TimeSplit{PrefillMs: &prefill, DecodeMs: &decode, NetworkMs: &network}}
	if got, want := ServerTiming(rec), `total;dur=60.000, prefill;dur=20.000, decode;dur=30.000, network;dur=1.500, llmtap;desc="out=unknown"`; got != want {
		t.Errorf("ServerTiming = %s, want %s", got, want)
	}
	if q, p, d, n := Split(rec); q != "" || p != prefill || d != decode || n != network {
		t.Errorf("Split = %v %v %v %v", q, p, d, n)
	}
	if q, p, d, n := Split(&record.Record{}); q != "" || p != "" || d != "" || n != "" {
		t.Errorf("Split without a time split = %v %v %v %v, want empty", q, p, d, n)
	}
	if Count(3, record.SourceTokenizer) != "" || Count(3, record.SourceUsage) != int64(3) || Ms(nil) != "" {
		t.Error("placeholder values: a count the tokenizer has yet to make or an unknown time must be empty")
	}
}

// TestWithoutOwnTiming: an upstream's entries named llmtap are taken out of Server-Timing
// values, whatever their case, parameters or quoted commas; every other entry is kept.
func TestWithoutOwnTiming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want []string
	}{
		{[]string{"db;dur=5"}, []string{"db;dur=5"}},
		{[]string{`llmtap;desc="out=999 (usage)"`}, nil},
		{[]string{`llmtap;desc="out=999 (usage)", db;dur=5`}, []string{"db;dur=5"}},
		{[]string{`db;desc="a, llmtap;desc=x", LLMTAP;dur=1, cache`}, []string{`db;desc="a, llmtap;desc=x", cache`}},
		{[]string{"db;dur=5", `Llmtap ; desc="x\", y"`, "edge"}, []string{"db;dur=5", "edge"}},
		{[]string{"llmtapx;dur=1", "llmtap-upstream"}, []string{"llmtapx;dur=1", "llmtap-upstream"}},
	}
	for _, tt := range tests {
		got := WithoutOwnTiming(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("WithoutOwnTiming(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzWithoutOwnTiming: no entry named llmtap survives, and removing is idempotent.
func FuzzWithoutOwnTiming(f *testing.F) {
	f.Add(`llmtap;desc="out=9", db;dur=5`, "x")
	f.Add(`a;desc="q\"", llmtap`, `llmtap;desc=","`)
	f.Fuzz(func(t *testing.T, a, b string) {
		got := WithoutOwnTiming([]string{a, b})
		for _, v := range got {
			for _, e := range splitList(v) {
				name, _, _ := strings.Cut(e, ";")
				if strings.EqualFold(strings.TrimSpace(name), TimingName) {
					t.Fatalf("WithoutOwnTiming(%q, %q) = %q keeps an llmtap entry", a, b, got)
				}
			}
		}
		if again := WithoutOwnTiming(got); strings.Join(again, "\n") != strings.Join(got, "\n") {
			t.Fatalf("not idempotent: %q then %q", got, again)
		}
	})
}
