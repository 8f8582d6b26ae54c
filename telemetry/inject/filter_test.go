package inject

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

const (
	content   = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	finish    = "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	usageOnly = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n"
	done      = "data: [DONE]\n\n"
)

// recorder keeps every write separately, to check that one write in gives at most one out.
type recorder struct {
	writes []string
	fail   bool
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.fail {
		return 0, errors.New("client gone")
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		writes  []string
		want    []string // the writes that reach the client
		removed int
	}{
		{"whole events pass one write for one",
			[]string{content, finish}, []string{content, finish}, 0},
		{"the usage chunk and [DONE] in one write (Ollama) lose only the chunk",
			[]string{content, finish + usageOnly + done}, []string{content, finish + done}, 1},
		{"a usage chunk alone in its write produces no write",
			[]string{content, usageOnly, done}, []string{content, done}, 1},
		{"an event split across writes is passed when complete",
			[]string{content[:10], content[10:] + finish[:5], finish[5:]}, []string{content, finish}, 0},
		{"a usage chunk split across writes is still removed",
			[]string{finish + usageOnly[:20], usageOnly[20:] + done}, []string{finish, done}, 1},
		{"the blank line split between writes",
			[]string{content[:len(content)-1], "\n" + done}, []string{content + done}, 0},
		{"CRLF line endings",
			[]string{strings.ReplaceAll(content+usageOnly+done, "\n", "\r\n")},
			[]string{strings.ReplaceAll(content+done, "\n", "\r\n")}, 1},
		{"a named event that is not a message is not an OpenAI chunk",
			[]string{"event: usage\n" + usageOnly}, []string{"event: usage\n" + usageOnly}, 0},
		{"a data value split over two lines is joined before deciding",
			[]string{"data: {\"choices\":[],\ndata: \"usage\":{}}\n\n" + done}, []string{done}, 1},
		{"comments are kept",
			[]string{": keep-alive\n\n" + content}, []string{": keep-alive\n\n" + content}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			f := NewFilter(&rec, 0)
			for _, w := range tt.writes {
				if n, err := f.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(w))
				}
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if strings.Join(rec.writes, "|") != strings.Join(tt.want, "|") {
				t.Errorf("writes\n  %q\nwant\n  %q", rec.writes, tt.want)
			}
			if f.Removed() != tt.removed {
				t.Errorf("removed %d, want %d", f.Removed(), tt.removed)
			}
		})
	}
}

// TestFilterCloseWritesHeldBytes: a stream cut inside an event still reaches the client in
// full, as it would without llmtap.
func TestFilterCloseWritesHeldBytes(t *testing.T) {
	t.Parallel()
	var rec recorder
	f := NewFilter(&rec, 0)
	f.Write([]byte(content + "data: {\"cho"))
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.writes, ""); got != content+"data: {\"cho" {
		t.Fatalf("got %q", got)
	}
}

// TestFilterOversized: an event longer than the limit is passed on as it comes and turns the
// filter off, so the filter never holds more than the limit.
func TestFilterOversized(t *testing.T) {
	t.Parallel()
	var rec recorder
	f := NewFilter(&rec, 16)
	long := "data: " + strings.Repeat("x", 40)
	f.Write([]byte(long))
	if len(f.pending) != 0 || strings.Join(rec.writes, "") != long {
		t.Fatalf("held %d bytes, wrote %q", len(f.pending), rec.writes)
	}
	f.Write([]byte("\n\n" + usageOnly))
	if got := strings.Join(rec.writes, ""); got != long+"\n\n"+usageOnly {
		t.Fatalf("after the oversized event the stream should pass unfiltered, got %q", got)
	}
}

// TestFilterWriteError: a failing client is reported, not swallowed.
func TestFilterWriteError(t *testing.T) {
	t.Parallel()
	f := NewFilter(&recorder{fail: true}, 0)
	if n, err := f.Write([]byte(content)); err == nil || n != 0 {
		t.Fatalf("Write = %d, %v; want 0 and the client's error", n, err)
	}
}

// TestFilterOllamaFixtures runs the recorded Ollama streams (asked with include_usage) through
// the filter in their recorded writes: the usage chunk goes, every other byte stays.
func TestFilterOllamaFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"chat", "completions"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile("../decode/testdata/" + name + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			var rec recorder
			f := NewFilter(&rec, 0)
			if _, err := f.Write(raw); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(rec.writes, "")
			if f.Removed() != 1 {
				t.Fatalf("removed %d usage chunks, want 1", f.Removed())
			}
			if strings.Contains(got, `"choices":[]`) || !strings.HasSuffix(got, done) {
				t.Fatalf("the usage chunk is still there or [DONE] is gone:\n%s", got[max(0, len(got)-600):])
			}
			if len(raw)-len(got) < len(`"choices":[]`) || !bytes.HasPrefix(raw, []byte(got[:len(got)-len(done)])) {
				t.Fatalf("more than the usage chunk changed")
			}
		})
	}
}

// sseData parses an SSE stream as a client does (WHATWG HTML: comments skipped, data lines
// joined, an event dispatched at a blank line when it has data) and returns the data of
// each event.
func sseData(s string) []string {
	var out, data []string
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	for line := range strings.SplitSeq(s, "\n") {
		switch {
		case line == "":
			if len(data) > 0 {
				out = append(out, strings.Join(data, "\n"))
			}
			data = nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// TestFilterKeepLength: with KeepLength the usage-only chunk becomes a comment of its length,
// so a response framed by a Content-Length keeps it, and an SSE client reads the same events
// as from a filter that removes the chunk (issue 35: such a response reached the client
// chunked).
func TestFilterKeepLength(t *testing.T) {
	t.Parallel()
	crlf := strings.ReplaceAll(usageOnly, "\n", "\r\n")
	for _, in := range []string{
		content + finish + usageOnly + done,
		content + finish + crlf + done,
		content + usageOnly + usageOnly + done,
	} {
		for _, split := range []int{1, 7, len(in)} {
			var kept, removed bytes.Buffer
			fk, fr := NewFilter(&kept, 0), NewFilter(&removed, 0)
			fk.KeepLength()
			for i := 0; i < len(in); i += split {
				p := []byte(in[i:min(i+split, len(in))])
				if _, err := fk.Write(p); err != nil {
					t.Fatal(err)
				}
				if _, err := fr.Write(p); err != nil {
					t.Fatal(err)
				}
			}
			if kept.Len() != len(in) {
				t.Errorf("split %d: %d bytes out of %d in: the length changed", split, kept.Len(), len(in))
			}
			if got, want := sseData(kept.String()), sseData(removed.String()); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != 3 && len(got) != 2 {
				t.Errorf("split %d: events %q, want those without the usage chunk %q", split, got, want)
			}
			if fk.Removed() == 0 || strings.Contains(kept.String(), `"usage"`) {
				t.Errorf("split %d: the usage chunk was not replaced: %q", split, kept.String())
			}
		}
	}
}
