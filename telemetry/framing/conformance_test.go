package framing

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// framers are the two framers under the one Framer contract, each built with a limit and a
// callback.
var framers = []struct {
	name string
	make func(limit int, fn func(*Event)) Framer
}{
	{"sse", func(limit int, fn func(*Event)) Framer { return NewSSE(limit, fn) }},
	{"ndjson", func(limit int, fn func(*Event)) Framer { return NewNDJSON(limit, fn) }},
}

// conformanceCase is one behaviour both framers share: the same stream of events written in
// each framing (sse, ndjson; empty where the case does not apply to that framing) must give the
// same events. Where the two formats' own rules differ (a final event without its terminator),
// ndjsonWant says what NDJSON gives instead.
type conformanceCase struct {
	name        string
	limit       int
	sse, ndjson string
	// want is the data of every dispatched event, in order; overMark stands for an oversized
	// one (dispatched with empty Data and Oversized set).
	want       []string
	ndjsonWant []string // when not nil, NDJSON's events instead of want
	truncated  bool     // what Close reports, for both
	reason     string
}

// overMark in a conformanceCase's want is an oversized event.
const overMark = "<oversized>"

var conformanceCases = []conformanceCase{
	{name: "one event", sse: "data: a\n\n", ndjson: "a\n",
		want: []string{"a"}, reason: "the basic event"},
	{name: "several events", sse: "data: a\n\ndata: b\n\ndata: c\n\n", ndjson: "a\nb\nc\n",
		want: []string{"a", "b", "c"}, reason: "one write may carry many events, dispatched in order"},
	{name: "crlf", sse: "data: a\r\n\r\ndata: b\r\n\r\n", ndjson: "a\r\nb\r\n",
		want: []string{"a", "b"}, reason: "CR LF ends a line like LF, and the CR is not data"},
	{name: "mixed line ends", sse: "data: a\r\n\ndata: b\n\r\n", ndjson: "a\r\nb\n",
		want: []string{"a", "b"}, reason: "CR LF and LF may alternate within one stream"},
	{name: "leading empty lines", sse: "\n\n\r\n\ndata: a\n\n", ndjson: "\n\n\r\n\na\n",
		want: []string{"a"}, reason: "empty lines with nothing pending are not events"},
	{name: "empty lines between events", sse: "data: a\n\n\n\n\ndata: b\n\n", ndjson: "a\n\n\n\nb\n",
		want: []string{"a", "b"}, reason: "empty lines between events dispatch nothing"},
	{name: "only empty lines", sse: "\n\n\n", ndjson: "\n\n\n",
		want: nil, reason: "a stream of empty lines has no events and is not truncated"},
	{name: "comments", sse: ": keep-alive\n\ndata: a\n\n: ping\n\ndata: b\n\n",
		want: []string{"a", "b"}, reason: "SSE comment lines are keep-alives, not events (NDJSON has no comments)"},
	{name: "whitespace lines", ndjson: " \t\r\na\n  \n",
		want: []string{"a"}, reason: "NDJSON lines of only JSON whitespace are skipped (SSE has no such rule)"},
	{name: "json payload", sse: "data: {\"x\":[1,2]}\n\n", ndjson: "{\"x\":[1,2]}\n",
		want: []string{`{"x":[1,2]}`}, reason: "the framers do not parse the JSON they carry"},
	{name: "oversized event", limit: 3, sse: "data: abcd\n\ndata: abc\n\n", ndjson: "abcd\nabc\n",
		want: []string{overMark, "abc"}, reason: "an event over the limit is dispatched marked and empty; one at the limit is kept"},
	{name: "oversized then recovery", limit: 3, sse: "data: abcdefghij\n\ndata: x\n\n", ndjson: "abcdefghij\nx\n",
		want: []string{overMark, "x"}, reason: "a long event is skipped, not buffered, and the stream recovers after it"},
	{name: "oversized with crlf", limit: 3, sse: "data: abc\r\n\r\ndata: abcd\r\n\r\n", ndjson: "abc\r\nabcd\r\n",
		want: []string{"abc", overMark}, reason: "the limit applies to the data, not to its line terminator"},
	{name: "truncated tail", sse: "data: a\n\ndata: b", ndjson: "a\nb",
		want: []string{"a"}, ndjsonWant: []string{"a", "b"}, truncated: true,
		reason: "a stream cut inside an event is truncated; SSE discards the partial event (WHATWG), NDJSON dispatches the final line"},
	{name: "truncated oversized tail", limit: 3, sse: "data: a\n\ndata: abcdef", ndjson: "a\nabcdef",
		want: []string{"a"}, ndjsonWant: []string{"a", overMark}, truncated: true,
		reason: "an oversized partial event is truncated too"},
	{name: "complete tail", sse: "data: a\n\n", ndjson: "a\n",
		want: []string{"a"}, reason: "a stream that ends on a terminator is not truncated"},
	{name: "empty stream", sse: "", ndjson: "",
		want: nil, reason: "nothing written, nothing pending"},
}

// TestFramerConformance runs every case against each framer it applies to, fed in one write,
// one byte per write, and split in two at every byte; then again after Reset, on the same
// framer. Every way of feeding must give the same events and the same Close result.
func TestFramerConformance(t *testing.T) {
	for _, tc := range conformanceCases {
		for _, fr := range framers {
			in := tc.sse
			want := tc.want
			if fr.name == "ndjson" {
				in = tc.ndjson
				if tc.ndjsonWant != nil {
					want = tc.ndjsonWant
				}
			}
			if in == "" && tc.name != "empty stream" {
				continue // the case does not apply to this framing
			}
			t.Run(tc.name+"/"+fr.name, func(t *testing.T) {
				t.Parallel()
				check := func(how string, f Framer, got *[]rec, writes []string) {
					t.Helper()
					*got = nil
					for i, w := range writes {
						f.Write([]byte(w), int64(i+1))
					}
					truncated := f.Close()
					if d := eventData(*got); !slices.Equal(d, want) || truncated != tc.truncated {
						t.Errorf("%s: %s\ngot  %q truncated=%v\nwant %q truncated=%v", how, tc.reason, d, truncated, want, tc.truncated)
					}
				}
				var got []rec
				f := fr.make(tc.limit, recorder(&got))
				check("one write", f, &got, []string{in})
				f.Reset()
				check("one write after Reset", f, &got, []string{in})
				var bytewise []string
				for i := range len(in) {
					bytewise = append(bytewise, in[i:i+1])
				}
				check("byte by byte", fr.make(tc.limit, recorder(&got)), &got, bytewise)
				for k := 1; k < len(in); k++ {
					check(fmt.Sprintf("split at %d", k), fr.make(tc.limit, recorder(&got)), &got, []string{in[:k], in[k:]})
				}
			})
		}
	}
}

// TestFramerConformanceAt checks the one timing rule both framers share: an event's time is
// that of the write that carried its first data byte, also when the event spans writes.
func TestFramerConformanceAt(t *testing.T) {
	t.Parallel()
	streams := map[string][]string{
		"sse":    {"data: a\n\nda", "ta: b", "\n\n"},
		"ndjson": {"a\nb", "", "\n"},
	}
	for _, fr := range framers {
		var got []rec
		f := fr.make(0, recorder(&got))
		for i, w := range streams[fr.name] {
			f.Write([]byte(w), int64(i+1))
		}
		f.Close()
		if len(got) != 2 || got[0].At != 1 || got[1].At != 1 {
			t.Errorf("%s: got %+v, want events a and b both at time 1 (their first bytes came in write 1)", fr.name, got)
		}
	}
}

// eventData is the data of evs, with overMark for an oversized event.
func eventData(evs []rec) []string {
	var out []string
	for _, e := range evs {
		if e.Over {
			if e.Data != "" {
				out = append(out, "oversized with data "+strings.Clone(e.Data))
				continue
			}
			out = append(out, overMark)
			continue
		}
		out = append(out, e.Data)
	}
	return out
}
