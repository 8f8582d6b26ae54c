package expose

import (
	"net/http"
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
	if Count(3, record.SourceTokenizer) != "" || Count(3, record.SourceUsage) != int64(3) || Ms(nil) != "" {
		t.Error("placeholder values: a count the tokenizer has yet to make or an unknown time must be empty")
	}
}
