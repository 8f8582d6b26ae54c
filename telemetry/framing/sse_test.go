package framing

import (
	"bytes"
	"slices"
	"testing"
)

// runSSE feeds writes to a new parser, write i at time i+1, and returns the events and Close's
// result.
func runSSE(maxEvent int, writes ...string) (evs []rec, truncated bool) {
	s := NewSSE(maxEvent, recorder(&evs))
	for i, w := range writes {
		s.Write([]byte(w), int64(i+1))
	}
	return evs, s.Close()
}

func TestSSE(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		max       int
		writes    []string
		want      []rec
		truncated bool
		reason    string
	}{
		{"lf", 0, []string{"data: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"the basic event: one data line ended by a blank line"},
		{"no space after colon", 0, []string{"data:a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 8}}, false,
			"the space after the colon is optional"},
		{"one space stripped", 0, []string{"data:  a\n\n"},
			[]rec{{Data: " a", At: 1, Size: 10}}, false,
			"only a single leading space is stripped from the value"},
		{"data lines joined", 0, []string{"data: a\ndata: b\n\n"},
			[]rec{{Data: "a\nb", At: 1, Size: 17}}, false,
			"several data lines are joined with a newline"},
		{"empty data dispatched", 0, []string{"data\n\ndata:\n\n"},
			[]rec{{At: 1, Size: 6}, {At: 1, Size: 7}}, false,
			"a data field with an empty value (with or without colon) still makes the buffer non-empty"},
		{"trailing empty data line", 0, []string{"data: a\ndata\n\n"},
			[]rec{{Data: "a\n", At: 1, Size: 14}}, false,
			"only the one final newline of the data buffer is removed"},
		{"no data not dispatched", 0, []string{"event: x\n\ndata: y\n\n"},
			[]rec{{Data: "y", At: 1, Size: 9}}, false,
			"a block without data is not dispatched but resets the event type"},
		{"event type", 0, []string{"event: ping\ndata: y\n\n"},
			[]rec{{Type: "ping", Data: "y", At: 1, Size: 21}}, false,
			"the event field sets the type"},
		{"id persists", 0, []string{"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"},
			[]rec{{Data: "a", ID: "7", At: 1, Size: 15}, {Data: "b", ID: "7", At: 1, Size: 9}, {Data: "c", At: 1, Size: 12}}, false,
			"the last event ID survives dispatch until an id field (here empty) replaces it"},
		{"id with nul ignored", 0, []string{"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n"},
			[]rec{{Data: "a", ID: "1", At: 1, Size: 15}, {Data: "b", ID: "1", At: 1, Size: 17}}, false,
			"an id containing NUL is ignored, per spec"},
		{"comment", 0, []string{": hi\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 14}}, false,
			"a comment line is ignored but its bytes belong to the event"},
		{"keep-alive not dispatched", 0, []string{": ping\n\n", "data: a\n\n"},
			[]rec{{Data: "a", At: 2, Size: 9}}, false,
			"a comment-only block has no data, so it is not an event"},
		{"unknown field", 0, []string{"foo: bar\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 18}}, false,
			"unknown fields are ignored"},
		{"field names exact", 0, []string{"Data: x\ndata : y\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 26}}, false,
			"field names are case-sensitive and end exactly at the colon"},
		{"colon in value", 0, []string{"data: a:b\n\n"},
			[]rec{{Data: "a:b", At: 1, Size: 11}}, false,
			"only the first colon separates name and value"},
		{"crlf", 0, []string{"data: a\r\n\r\n"},
			[]rec{{Data: "a", At: 1, Size: 10}}, false,
			"CR LF is one line end; the last LF counts toward the next event (see Event.Size)"},
		{"lone cr", 0, []string{"data: a\rdata: b\r\rdata: c\r\r"},
			[]rec{{Data: "a\nb", At: 1, Size: 17}, {Data: "c", At: 1, Size: 9}}, false,
			"a lone CR is a line end"},
		{"cr lf split across writes", 0, []string{"data: a\r", "\ndata: b\r", "\n\r", "\n"},
			[]rec{{Data: "a\nb", At: 1, Size: 19}}, false,
			"an LF starting a write after a CR ending the last one is the same line end, not a blank line"},
		{"cr then other byte", 0, []string{"data: a\r", "data: b\r\r"},
			[]rec{{Data: "a\nb", At: 1, Size: 17}}, false,
			"the pending CR state ends when the next write does not start with LF"},
		{"empty write keeps pending cr", 0, []string{"data: a\r", "", "\n\n"},
			[]rec{{Data: "a", At: 1, Size: 10}}, false,
			"an empty write must not forget that an LF may complete the CR"},
		{"bom stripped", 0, []string{"\xEF\xBB\xBFdata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"a leading byte order mark is stripped, otherwise the first field name would be unknown"},
		{"bom split", 0, []string{"\xEF", "\xBB", "\xBFdata: a\n\n"},
			[]rec{{Data: "a", At: 3, Size: 9}}, false,
			"the byte order mark may arrive one byte per write"},
		{"bom only once", 0, []string{"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"a second byte order mark is part of a field name"},
		{"bom only at start", 0, []string{"data: a\n\n", "\xEF\xBB\xBFdata: b\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"a byte order mark after the first byte is not stripped"},
		{"partial bom is data", 0, []string{"\xEF\xBB", ":x\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 14}}, false,
			"held bytes that turn out not to be a byte order mark start the first line, at their own time"},
		{"event split across writes", 0, []string{"da", "ta: he", "llo\n", "\n"},
			[]rec{{Data: "hello", At: 1, Size: 13}}, false,
			"an event may be split anywhere, its time is that of its first byte"},
		{"space split from colon", 0, []string{"data:", "", " a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"the leading space is stripped also when it arrives in a later write"},
		{"no-colon field split", 0, []string{"da", "ta\n\n"},
			[]rec{{At: 1, Size: 6}}, false,
			"a field name without colon may be split across writes"},
		{"long unknown name split", 0, []string{"dataxyz", ": q\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 20}}, false,
			"a split field name longer than any known one is ignored"},
		{"two data lines split", 0, []string{"data: a\nda", "ta: b\n\n"},
			[]rec{{Data: "a\nb", At: 1, Size: 17}}, false,
			"a data line carried over joins one seen whole in the previous write"},
		{"several events per write", 0, []string{"data: a\n\ndata: b\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}, {Data: "b", At: 1, Size: 9}}, false,
			"one write may carry many events"},
		{"at skips comments", 0, []string{": keep\n", "event: x\n", "data: a\n\n"},
			[]rec{{Type: "x", Data: "a", At: 2, Size: 25}}, false,
			"the time is that of the first non-comment line, not of a preceding keep-alive"},
		{"leading blank lines", 0, []string{"\n\n\ndata: a\n\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"blank lines with nothing pending dispatch nothing"},
		{"retry is not an event", 0, []string{"retry: 10\n\n"},
			nil, false,
			"a block with only retry has no data"},
		{"oversized line", 4, []string{"data: abcde\n\ndata: ok\n\n"},
			[]rec{{At: 1, Size: 13, Over: true}, {Data: "ok", At: 1, Size: 10}}, false,
			"data over the limit is dropped but the event is dispatched and the stream recovers"},
		{"oversized by join", 4, []string{"data: ab\ndata: cd\n\n"},
			[]rec{{At: 1, Size: 19, Over: true}}, false,
			"the limit applies to the joined data, newline included"},
		{"at the limit", 4, []string{"data: ab\ndata: c\n\n"},
			[]rec{{Data: "ab\nc", At: 1, Size: 18}}, false,
			"data of exactly the limit is kept"},
		{"oversized across writes", 4, []string{"data: ab", "cdef", "gh\n\n", "data: x\n\n"},
			[]rec{{At: 1, Size: 16, Over: true}, {Data: "x", At: 4, Size: 9}}, false,
			"a line over the limit is not buffered while it streams in"},
		{"oversized then more data", 4, []string{"data: abcde\ndata: x\n\n"},
			[]rec{{At: 1, Size: 21, Over: true}}, false,
			"once oversized, later data lines of the event are dropped too"},
		{"truncated mid-line", 0, []string{"data: a\n\ndata: b"},
			[]rec{{Data: "a", At: 1, Size: 9}}, true,
			"a stream cut inside a line is truncated and the partial event is discarded"},
		{"truncated before blank line", 0, []string{"data: a\n"},
			nil, true,
			"data without the dispatching blank line is discarded, per spec"},
		{"trailing comment not truncated", 0, []string{"data: a\n\n: bye\n"},
			[]rec{{Data: "a", At: 1, Size: 9}}, false,
			"a complete comment after the last event leaves nothing pending"},
		{"truncated in comment", 0, []string{": by"},
			nil, true,
			"a stream cut inside any line is truncated"},
		{"held bom at close", 0, []string{"\xEF\xBB"},
			nil, true,
			"bytes held back as a possible byte order mark are pending bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, truncated := runSSE(tt.max, tt.writes...)
			if !slices.Equal(evs, tt.want) || truncated != tt.truncated {
				t.Errorf("%s\ngot  %+v truncated=%v\nwant %+v truncated=%v", tt.reason, evs, truncated, tt.want, tt.truncated)
			}
			// Every row must also come out the same when fed one byte at a time: only At may
			// change, since each byte is then its own write.
			var bytewise []string
			for _, w := range tt.writes {
				for i := range len(w) {
					bytewise = append(bytewise, w[i:i+1])
				}
			}
			evs2, truncated2 := runSSE(tt.max, bytewise...)
			if !slices.Equal(withoutAt(evs2), withoutAt(tt.want)) || truncated2 != tt.truncated {
				t.Errorf("byte by byte: %s\ngot  %+v truncated=%v\nwant %+v", tt.reason, evs2, truncated2, tt.want)
			}
		})
	}
}

func TestSSEFieldLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   []rec
		reason string
	}{
		{"long type", []string{"event: abcde\ndata: x\n\n"},
			[]rec{{At: 1, Size: 22, Over: true}},
			"an event type over the field limit makes the event oversized"},
		{"long type split", []string{"event: ab", "cde\ndata: x\n\n"},
			[]rec{{At: 1, Size: 22, Over: true}},
			"the same when the type streams in across writes"},
		{"type at limit", []string{"event: abcd\ndata: x\n\n"},
			[]rec{{Type: "abcd", Data: "x", At: 1, Size: 21}},
			"a type of exactly the limit is kept"},
		{"long id ignored", []string{"id: 1\nid: abcde\ndata: x\n\n"},
			[]rec{{ID: "1", Data: "x", At: 1, Size: 25}},
			"an id over the limit is ignored like one with NUL"},
		{"long id split ignored", []string{"id: 1\nid: ab", "cde\ndata: x\n\n"},
			[]rec{{ID: "1", Data: "x", At: 1, Size: 25}},
			"the same when the id streams in across writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var evs []rec
			s := NewSSE(0, recorder(&evs))
			s.maxField = 4
			for i, w := range tt.writes {
				s.Write([]byte(w), int64(i+1))
			}
			if !slices.Equal(evs, tt.want) {
				t.Errorf("%s\ngot  %+v\nwant %+v", tt.reason, evs, tt.want)
			}
		})
	}
}

func TestSSERetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		ms     int64
		ok     bool
		reason string
	}{
		{"digits", []string{"retry: 3000\n"}, 3000, true, "a valid retry sets the reconnection time"},
		{"split", []string{"retry: 30", "00\n"}, 3000, true, "a retry value may stream in across writes"},
		{"not digits", []string{"retry: 3000\nretry: 3s\n"}, 3000, true, "a value with a non-digit is ignored"},
		{"empty", []string{"retry:\n"}, 0, false, "an empty value is not a number"},
		{"overflow", []string{"retry: 99999999999999999999\n"}, 0, false, "a value that does not fit is ignored"},
		{"none", []string{"data: a\n\n"}, 0, false, "no retry field, no retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSSE(0, nil)
			for i, w := range tt.writes {
				s.Write([]byte(w), int64(i))
			}
			if ms, ok := s.Retry(); ms != tt.ms || ok != tt.ok {
				t.Errorf("%s: got %d,%v want %d,%v", tt.reason, ms, ok, tt.ms, tt.ok)
			}
		})
	}
}

// TestSSEKeepsNoCallerMemory checks that data seen in place in one Write is copied before the
// Write returns when the event is not complete yet: the caller may reuse its buffer.
func TestSSEKeepsNoCallerMemory(t *testing.T) {
	t.Parallel()
	var evs []rec
	s := NewSSE(0, recorder(&evs))
	p := []byte("data: abc\n")
	s.Write(p, 1)
	copy(p, "XXXXXXXXXX")
	s.Write([]byte("\n"), 2)
	if want := []rec{{Data: "abc", At: 1, Size: 11}}; !slices.Equal(evs, want) {
		t.Errorf("got %+v want %+v", evs, want)
	}
}

func TestSSEStatsResetClose(t *testing.T) {
	t.Parallel()
	var evs []rec
	s := NewSSE(4, recorder(&evs))
	in := "\xEF\xBB\xBF: k\nid: 1\ndata: a\n\ndata: toolong\n\n: k\n\n"
	s.Write([]byte(in), 1)
	want := SSEStats{Events: 2, Oversized: 1, Comments: 2, Bytes: int64(len(in))}
	if got := s.Stats(); got != want {
		t.Errorf("stats: got %+v want %+v", got, want)
	}
	if s.Close() {
		t.Error("a stream ending on a blank line is not truncated")
	}
	s.Write([]byte("data: late\n\n"), 2)
	if len(evs) != 2 {
		t.Errorf("a Write after Close must be ignored, got %+v", evs)
	}
	// After Reset the parser is new again: the byte order mark is stripped, the last event ID
	// and the counters are gone.
	s.Reset()
	evs = nil
	s.Write([]byte("\xEF\xBB\xBFdata: b\n\n"), 3)
	if want := []rec{{Data: "b", At: 3, Size: 9}}; !slices.Equal(evs, want) {
		t.Errorf("after Reset: got %+v want %+v", evs, want)
	}
	if got := s.Stats(); got.Events != 1 || got.Bytes != 12 {
		t.Errorf("after Reset: stats %+v", got)
	}
}

// TestSSECaptures feeds each real capture read by read, with each read's own time.
func TestSSECaptures(t *testing.T) {
	t.Parallel()
	for _, name := range sseCaptures {
		t.Run(name, func(t *testing.T) {
			reads, body := loadCapture(t, name)
			if bytes.IndexByte(body, '\r') >= 0 {
				t.Fatal("the expectation below assumes LF line ends")
			}
			// Derive the events independently of the parser: every line starting with "data:"
			// that follows a blank line (or the stream start) begins an event, at its offset.
			var starts []int
			dataLines := 0
			prevBlank := true
			off := 0
			for line := range bytes.Lines(body) {
				if bytes.HasPrefix(line, []byte("data:")) {
					dataLines++
					if prevBlank {
						starts = append(starts, off)
					}
				}
				prevBlank = len(line) == 1
				off += len(line)
			}
			if dataLines != len(starts) {
				t.Fatalf("the capture has %d data lines in %d events; README says one per event", dataLines, len(starts))
			}

			var evs []rec
			s := NewSSE(0, recorder(&evs))
			for _, r := range reads {
				s.Write(r.data, r.at)
			}
			if s.Close() {
				t.Error("a complete capture is not truncated")
			}
			if len(evs) != len(starts) {
				t.Fatalf("got %d events, the capture has %d", len(evs), len(starts))
			}
			for i, ev := range evs {
				if want := readAt(t, reads, starts[i]); ev.At != want {
					t.Errorf("event %d: At %d, its first byte was read at %d", i, ev.At, want)
				}
				if ev.Over || ev.Type != "" || ev.ID != "" {
					t.Errorf("event %d: unexpected %+v", i, ev)
				}
			}
			if last := evs[len(evs)-1].Data; last != "[DONE]" {
				t.Errorf("last event %q, want [DONE]", last)
			}

			whole, _ := runSSE(0, string(body))
			if !slices.Equal(withoutAt(evs), withoutAt(whole)) {
				t.Error("read by read and all at once give different events")
			}
			var bytewise []rec
			b := NewSSE(0, recorder(&bytewise))
			for i := range body {
				b.Write(body[i:i+1], 0)
			}
			if !slices.Equal(withoutAt(bytewise), withoutAt(whole)) {
				t.Error("byte by byte and all at once give different events")
			}
		})
	}
}

// TestSSEChatUsage checks the quirk the README points out: the usage chunk and [DONE] share one
// read, so they share one At.
func TestSSEChatUsage(t *testing.T) {
	t.Parallel()
	reads, _ := loadCapture(t, "chat")
	var evs []rec
	s := NewSSE(0, recorder(&evs))
	for _, r := range reads {
		s.Write(r.data, r.at)
	}
	n := len(evs)
	if n < 2 || !bytes.Contains([]byte(evs[n-2].Data), []byte(`"usage"`)) {
		t.Fatalf("the next to last event is not the usage chunk")
	}
	if evs[n-2].At != evs[n-1].At {
		t.Errorf("usage at %d, [DONE] at %d: the capture has them in one read", evs[n-2].At, evs[n-1].At)
	}
}
