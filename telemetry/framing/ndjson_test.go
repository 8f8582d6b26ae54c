package framing

import (
	"bytes"
	"slices"
	"testing"
)

// runNDJSON feeds writes to a new splitter, write i at time i+1, and returns the events and
// Close's result.
func runNDJSON(maxLine int, writes ...string) (evs []rec, truncated bool) {
	s := NewNDJSON(maxLine, recorder(&evs))
	for i, w := range writes {
		s.Write([]byte(w), int64(i+1))
	}
	return evs, s.Close()
}

func TestNDJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      []rec
		truncated bool
		reason    string
	}{
		{"lines", 0, []string{`{"a":1}` + "\n" + `{"b":2}` + "\n"},
			[]rec{{Data: `{"a":1}`, At: 1, Size: 8}, {Data: `{"b":2}`, At: 1, Size: 8}}, false,
			"one event per line, several per write"},
		{"crlf", 0, []string{"a\r\n"},
			[]rec{{Data: "a", At: 1, Size: 3}}, false,
			"a CR before the LF is stripped"},
		{"one cr stripped", 0, []string{"a\r\r\n"},
			[]rec{{Data: "a\r", At: 1, Size: 4}}, false,
			"only the one CR of a CR LF pair is a terminator"},
		{"blank lines skipped", 0, []string{"\n \t\r\n\r\na\n"},
			[]rec{{Data: "a", At: 1, Size: 2}}, false,
			"empty and whitespace-only lines are not events"},
		{"leading whitespace kept", 0, []string{"  a\n"},
			[]rec{{Data: "  a", At: 1, Size: 4}}, false,
			"the splitter does not trim a line that has content"},
		{"split across writes", 0, []string{`{"a"`, ":1}", "\n"},
			[]rec{{Data: `{"a":1}`, At: 1, Size: 8}}, false,
			"a line may span writes; its time is that of its first byte"},
		{"cr split from lf", 0, []string{"a\r", "\n"},
			[]rec{{Data: "a", At: 1, Size: 3}}, false,
			"the CR is stripped also when the LF comes in the next write"},
		{"oversized", 3, []string{"abcd\nabc\n"},
			[]rec{{At: 1, Size: 5, Over: true}, {Data: "abc", At: 1, Size: 4}}, false,
			"a line over the limit is dispatched empty and marked; one at the limit is kept"},
		{"cr not counted", 3, []string{"abc\r\n"},
			[]rec{{Data: "abc", At: 1, Size: 5}}, false,
			"the limit applies to the line without its terminator"},
		{"cr not counted split", 3, []string{"abc\r", "\n"},
			[]rec{{Data: "abc", At: 1, Size: 5}}, false,
			"the carry buffer leaves room for a CR to strip"},
		{"oversized across writes", 3, []string{"ab", "cd", "ef\nx\n"},
			[]rec{{At: 1, Size: 7, Over: true}, {Data: "x", At: 3, Size: 2}}, false,
			"a long line is not buffered while it streams in, and the stream recovers"},
		{"oversized whitespace skipped", 3, []string{"     ", "   \n"},
			nil, false,
			"a long whitespace-only line is still blank"},
		{"oversized then text", 3, []string{"    ", "x\n"},
			[]rec{{At: 1, Size: 6, Over: true}}, false,
			"content after the limit was passed still makes the line an event"},
		{"final line", 0, []string{"a\nb"},
			[]rec{{Data: "a", At: 1, Size: 2}, {Data: "b", At: 1, Size: 1}}, true,
			"Close dispatches a last line without newline and reports it"},
		{"final line split", 0, []string{"{", "}"},
			[]rec{{Data: "{}", At: 1, Size: 2}}, true,
			"the last line may span writes too"},
		{"final whitespace", 0, []string{"a\n  "},
			[]rec{{Data: "a", At: 1, Size: 2}}, false,
			"trailing whitespace is not a truncated line"},
		{"final oversized", 2, []string{"abc"},
			[]rec{{At: 1, Size: 3, Over: true}}, true,
			"an oversized last line is dispatched marked"},
		{"empty stream", 0, nil,
			nil, false,
			"nothing written, nothing pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, truncated := runNDJSON(tt.max, tt.writes...)
			if !slices.Equal(evs, tt.want) || truncated != tt.truncated {
				t.Errorf("%s\ngot  %+v truncated=%v\nwant %+v truncated=%v", tt.reason, evs, truncated, tt.want, tt.truncated)
			}
			var bytewise []string
			for _, w := range tt.writes {
				for i := range len(w) {
					bytewise = append(bytewise, w[i:i+1])
				}
			}
			evs2, truncated2 := runNDJSON(tt.max, bytewise...)
			if !slices.Equal(withoutAt(evs2), withoutAt(tt.want)) || truncated2 != tt.truncated {
				t.Errorf("byte by byte: %s\ngot  %+v truncated=%v\nwant %+v", tt.reason, evs2, truncated2, tt.want)
			}
		})
	}
}

// TestNDJSONKeepsNoCallerMemory checks that a partial line is copied before Write returns.
func TestNDJSONKeepsNoCallerMemory(t *testing.T) {
	t.Parallel()
	var evs []rec
	s := NewNDJSON(0, recorder(&evs))
	p := []byte(`{"a":1}`)
	s.Write(p, 1)
	copy(p, "XXXXXXX")
	s.Write([]byte("\n"), 2)
	if want := []rec{{Data: `{"a":1}`, At: 1, Size: 8}}; !slices.Equal(evs, want) {
		t.Errorf("got %+v want %+v", evs, want)
	}
}

func TestNDJSONStatsResetClose(t *testing.T) {
	t.Parallel()
	var evs []rec
	s := NewNDJSON(3, recorder(&evs))
	in := "a\n\n  \nabcd\nb"
	s.Write([]byte(in), 1)
	if !s.Close() {
		t.Error("a final line without newline is a truncation")
	}
	want := NDJSONStats{Events: 3, Oversized: 1, Blank: 2, Bytes: int64(len(in))}
	if got := s.Stats(); got != want {
		t.Errorf("stats: got %+v want %+v", got, want)
	}
	if s.Close() {
		t.Error("a second Close has nothing pending")
	}
	s.Write([]byte("c\n"), 2)
	if len(evs) != 3 {
		t.Errorf("a Write after Close must be ignored, got %+v", evs)
	}
	s.Reset()
	evs = nil
	s.Write([]byte("d\n"), 3)
	if want := []rec{{Data: "d", At: 3, Size: 2}}; !slices.Equal(evs, want) {
		t.Errorf("after Reset: got %+v want %+v", evs, want)
	}
	if got := s.Stats(); got != (NDJSONStats{Events: 1, Bytes: 2}) {
		t.Errorf("after Reset: stats %+v", got)
	}
}

// TestNDJSONCaptures feeds the native-API capture read by read, with each read's own time.
func TestNDJSONCaptures(t *testing.T) {
	t.Parallel()
	for _, name := range ndjsonCaptures {
		t.Run(name, func(t *testing.T) {
			reads, body := loadCapture(t, name)
			// Derive the lines independently: the offset of every non-empty line.
			var starts []int
			off := 0
			for line := range bytes.Lines(body) {
				if len(bytes.TrimSpace(line)) > 0 {
					starts = append(starts, off)
				}
				off += len(line)
			}

			var evs []rec
			s := NewNDJSON(0, recorder(&evs))
			for _, r := range reads {
				s.Write(r.data, r.at)
			}
			if s.Close() {
				t.Error("the capture ends in a newline: not truncated")
			}
			if len(evs) != len(starts) {
				t.Fatalf("got %d lines, the capture has %d", len(evs), len(starts))
			}
			for i, ev := range evs {
				if want := readAt(t, reads, starts[i]); ev.At != want {
					t.Errorf("line %d: At %d, its first byte was read at %d", i, ev.At, want)
				}
				if ev.Over || !bytes.HasPrefix([]byte(ev.Data), []byte("{")) {
					t.Errorf("line %d: unexpected %+v", i, ev)
				}
			}
			if last := evs[len(evs)-1].Data; !bytes.Contains([]byte(last), []byte(`"done":true`)) {
				t.Errorf("last line %q is not the final summary", last)
			}

			whole, _ := runNDJSON(0, string(body))
			if !slices.Equal(withoutAt(evs), withoutAt(whole)) {
				t.Error("read by read and all at once give different lines")
			}
			var bytewise []rec
			b := NewNDJSON(0, recorder(&bytewise))
			for i := range body {
				b.Write(body[i:i+1], 0)
			}
			if !slices.Equal(withoutAt(bytewise), withoutAt(whole)) {
				t.Error("byte by byte and all at once give different lines")
			}
		})
	}
}
