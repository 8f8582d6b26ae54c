package meter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// The compatibility corpus (testdata/corpus, see its README.md and docs/compatibility.md):
// streams captured by other projects from real providers and servers, each with the
// expectations read from the stream by hand and by build.py's reader, never from llmtap.

// corpusStream is one entry of testdata/corpus/MANIFEST.json.
type corpusStream struct {
	File     string `json:"file"`
	Framing  string `json:"framing"` // "sse", "ndjson" or "chunks" (one JSON chunk a line)
	Provider string `json:"provider"`
	API      string `json:"api"`
	Path     string `json:"path"`
	Request  *struct {
		StreamOptions json.RawMessage `json:"stream_options"`
		N             json.RawMessage `json:"n"`
	} `json:"request"`
	Source struct {
		Repository string `json:"repository"`
		Path       string `json:"path"`
		Commit     string `json:"commit"`
		Licence    string `json:"licence"`
	} `json:"source"`
	Expect corpusExpect `json:"expect"`
}

// corpusExpect is what reading the stream says llmtap must find. A nil count is one the
// stream does not report, which llmtap must then not claim to have from the server.
type corpusExpect struct {
	Outcome           string `json:"outcome"` // "complete", "truncated" or "stream_error"
	ContentEvents     int    `json:"content_events"`
	FirstContentPiece *int   `json:"first_content_piece"`
	InputTokens       *int64 `json:"input_tokens"`
	OutputTokens      *int64 `json:"output_tokens"`
	ReasoningTokens   *int64 `json:"reasoning_tokens"`
}

func loadCorpus(t testing.TB) []corpusStream {
	t.Helper()
	b, err := os.ReadFile("testdata/corpus/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Streams []corpusStream `json:"streams"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Streams
}

// corpusPieces cuts a stream after every event, as build.py does: after each blank line of an
// SSE stream (lines end in CRLF, LF or CR), after each line of NDJSON; a "chunks" file's lines
// are framed as SSE data events. An unterminated tail is a piece of its own.
func corpusPieces(raw []byte, framing string) [][]byte {
	var out [][]byte
	switch framing {
	case "chunks":
		for _, line := range bytes.Split(raw, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				out = append(out, append(append([]byte("data: "), line...), "\n\n"...))
			}
		}
		return out
	case "ndjson":
		for len(raw) > 0 {
			i := bytes.IndexByte(raw, '\n')
			if i < 0 {
				return append(out, raw)
			}
			out, raw = append(out, raw[:i+1]), raw[i+1:]
		}
		return out
	}
	start, lineStart := 0, 0
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\n' && c != '\r' {
			continue
		}
		end := i + 1
		if c == '\r' && i+1 < len(raw) && raw[i+1] == '\n' {
			end++
		}
		if i == lineStart { // a blank line: the event ends here
			out = append(out, raw[start:end])
			start = end
		}
		i, lineStart = end-1, end
	}
	if start < len(raw) {
		out = append(out, raw[start:])
	}
	return out
}

// corpusRequest is the part of the captured request the meter reads: stream options and n.
func corpusRequest(s corpusStream) []byte {
	req := map[string]json.RawMessage{"model": json.RawMessage(`"corpus"`), "stream": json.RawMessage("true")}
	if s.Request != nil {
		if len(s.Request.StreamOptions) > 0 && string(s.Request.StreamOptions) != "null" {
			req["stream_options"] = s.Request.StreamOptions
		}
		if len(s.Request.N) > 0 && string(s.Request.N) != "null" {
			req["n"] = s.Request.N
		}
	}
	b, _ := json.Marshal(req)
	return b
}

// meterPieces feeds writes to a fresh meter, write i at t0 + (i+1) ms, and returns its record
// (Finish only: the figures checked are the server's and the meter's, not the tokenizer's).
func meterPieces(s corpusStream, writes [][]byte) *record.Record {
	pool := NewPool(Options{API: s.API})
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i+1) * time.Millisecond) }
	m := pool.Get(t0, s.Path)
	ct := "text/event-stream"
	if s.Framing == "ndjson" {
		ct = "application/x-ndjson"
	}
	m.RequestBody(corpusRequest(s), false)
	m.Headers(http.StatusOK, http.Header{"Content-Type": {ct}}, t0)
	for i, w := range writes {
		m.Write(w, at(i))
	}
	rec := m.Finish(at(len(writes)), "", "")
	m.Release()
	return rec
}

func outcomeOf(r *record.Record) string {
	switch r.Error {
	case "":
		return "complete"
	case record.ErrTruncated, record.ErrStream:
		return r.Error
	}
	return "error " + r.Error + ": " + r.ErrorMsg
}

// checkCorpus compares a record with a stream's expectations.
func checkCorpus(t *testing.T, how string, x corpusExpect, r *record.Record) {
	t.Helper()
	want := x.Outcome
	if want == "stream_error" {
		want = record.ErrStream
	}
	if got := outcomeOf(r); got != want {
		t.Errorf("%s: outcome %s (%s), want %s", how, got, r.ErrorMsg, want)
	}
	if r.ContentEvents != x.ContentEvents {
		t.Errorf("%s: %d content events, want %d", how, r.ContentEvents, x.ContentEvents)
	}
	for _, c := range []struct {
		name string
		got  int64
		src  bool // the record says the count came from the server
		want *int64
	}{
		{"input tokens", r.InputTokens, r.InputTokensSource == record.SourceUsage, x.InputTokens},
		{"output tokens", r.OutputTokens, r.OutputTokensSource == record.SourceUsage, x.OutputTokens},
		{"reasoning tokens", r.ReasoningTokens, r.ReasoningTokens >= 0, x.ReasoningTokens},
	} {
		switch {
		case c.want == nil && c.src:
			t.Errorf("%s: %s %d from the server, but the stream reports none", how, c.name, c.got)
		case c.want != nil && (!c.src || c.got != *c.want):
			t.Errorf("%s: %s %d (from the server: %v), want %d", how, c.name, c.got, c.src, *c.want)
		}
	}
}

// TestCorpus feeds every stream of the corpus through the meter cut at its events (event i at
// i+1 ms, so TTFT names the piece of the first output), whole, one byte at a time and at seeded
// random places, and checks the outcome, the content events, the first output and the token
// counts the server reported against the expectations read from the stream.
func TestCorpus(t *testing.T) {
	t.Parallel()
	streams := loadCorpus(t)
	providers := map[string]bool{}
	for _, s := range streams {
		providers[s.Provider] = true
	}
	// The corpus is the compatibility claim of docs/compatibility.md: it must not shrink.
	if len(streams) < 100 || len(providers) < 25 {
		t.Fatalf("the corpus has %d streams from %d providers; want at least 100 from 25", len(streams), len(providers))
	}
	for _, s := range streams {
		t.Run(s.File, func(t *testing.T) {
			t.Parallel()
			if s.Source.Repository == "" || len(s.Source.Commit) != 40 || s.Source.Licence == "" {
				t.Fatalf("provenance incomplete: %+v", s.Source)
			}
			raw, err := os.ReadFile(filepath.Join("testdata/corpus", s.File))
			if err != nil {
				t.Fatal(err)
			}
			pieces := corpusPieces(raw, s.Framing)
			r := meterPieces(s, pieces)
			checkCorpus(t, "by event", s.Expect, r)
			switch {
			case s.Expect.FirstContentPiece == nil && r.TTFTMs != nil:
				t.Errorf("by event: TTFT %v ms, but the stream has no output", *r.TTFTMs)
			case s.Expect.FirstContentPiece != nil && (r.TTFTMs == nil || *r.TTFTMs != float64(*s.Expect.FirstContentPiece+1)):
				t.Errorf("by event: TTFT %v ms, want %d (the first output is piece %d)", r.TTFTMs, *s.Expect.FirstContentPiece+1, *s.Expect.FirstContentPiece)
			}

			whole := bytes.Join(pieces, nil)
			checkCorpus(t, "whole", s.Expect, meterPieces(s, [][]byte{whole}))
			bytewise := make([][]byte, len(whole))
			for i := range whole {
				bytewise[i] = whole[i : i+1]
			}
			checkCorpus(t, "byte by byte", s.Expect, meterPieces(s, bytewise))
			for seed := range uint64(3) {
				rng := rand.New(rand.NewPCG(seed, 31))
				var writes [][]byte
				for rest := whole; len(rest) > 0; {
					n := min(1+rng.IntN(64), len(rest))
					writes, rest = append(writes, rest[:n]), rest[n:]
				}
				checkCorpus(t, fmt.Sprintf("random seed %d", seed), s.Expect, meterPieces(s, writes))
			}

			// Cut right after its first output, a stream that completes is truncated: the
			// end-of-stream rule must not take a stream that stopped early for a whole one.
			if s.Expect.Outcome == "complete" && s.Expect.FirstContentPiece != nil && *s.Expect.FirstContentPiece+1 < len(pieces) {
				cut := meterPieces(s, pieces[:*s.Expect.FirstContentPiece+1])
				if cut.Error != record.ErrTruncated {
					t.Errorf("cut after its first output: outcome %q, want truncated", cut.Error)
				}
			}
			checkUsageAsked(t, s, pieces)
		})
	}
}

// checkUsageAsked checks the other half of the end-of-stream rule on a stream that ends, without
// "[DONE]", on the usage chunk its request asked for (Writer's): cut before that chunk it is
// truncated, and the same cut stream is complete when the request did not ask for usage.
func checkUsageAsked(t *testing.T, s corpusStream, pieces [][]byte) {
	t.Helper()
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if s.Request != nil {
		_ = json.Unmarshal(s.Request.StreamOptions, &opts)
	}
	if !opts.IncludeUsage || s.Expect.Outcome != "complete" || bytes.Contains(bytes.Join(pieces, nil), []byte("[DONE]")) {
		return
	}
	last := len(pieces) - 1
	for last >= 0 && !bytes.Contains(pieces[last], []byte(`"usage":{`)) {
		last--
	}
	if last <= 0 {
		t.Fatal("the request asked for usage, the stream is complete without [DONE], and no usage chunk was found")
	}
	if r := meterPieces(s, pieces[:last]); r.Error != record.ErrTruncated {
		t.Errorf("cut before the usage chunk it asked for: outcome %q, want truncated", r.Error)
	}
	unasked := s
	unasked.Request = nil
	if r := meterPieces(unasked, pieces[:last]); r.Error != "" {
		t.Errorf("cut before a usage chunk nobody asked for: outcome %q (%s), want complete", r.Error, r.ErrorMsg)
	}
}
