package decode

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// xview is view plus the Result fields the decoders of the other APIs added, so that their rows
// state those too.
type xview struct {
	view
	Ended         bool
	ServerTimings ServerTimings
}

func xviewOf(r *Result) xview {
	return xview{view: viewOf(r), Ended: r.Ended, ServerTimings: r.ServerTimings}
}

// xfresh is the view of a decoder that has seen nothing.
func xfresh() xview { return xview{view: fresh()} }

// formatRow is one table row for a decoder of the other APIs: events (or, when body is set, one
// body) and what the decoder must make of them.
type formatRow struct {
	name, reason string
	events       []ev
	body         string // decoded with Body when events is nil
	kinds        []Kind
	want         xview // Usage left zero means NoUsage
}

// runFormatRows runs rows against fresh decoders made by newDec, and checks that Reset brings a
// used decoder back to the fresh state.
func runFormatRows(t *testing.T, newDec func() ResponseDecoder, rows []formatRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			dec := newDec()
			var kinds []Kind
			if r.events == nil {
				kinds = append(kinds, dec.Body([]byte(r.body)))
			}
			for _, e := range r.events {
				kinds = append(kinds, dec.Event([]byte(e.typ), []byte(e.data)))
			}
			if !slices.Equal(kinds, r.kinds) {
				t.Errorf("%s\nkinds = %v, want %v", r.reason, kinds, r.kinds)
			}
			want := r.want
			if want.Usage == (Usage{}) {
				want.Usage = NoUsage
			}
			if got := xviewOf(dec.Result()); got != want {
				t.Errorf("%s\nresult = %+v\nwant     %+v", r.reason, got, want)
			}
			dec.Reset()
			if got := xviewOf(dec.Result()); got != xfresh() {
				t.Errorf("Reset left %+v", got)
			}
		})
	}
}

// te is an SSE event whose name repeats its data's type, as the Anthropic and Responses APIs
// send them.
func te(typ, data string) ev { return ev{typ: typ, data: data} }

// splitLines splits an NDJSON capture into its lines, independently of the framing package.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// sprintf is fmt.Sprintf for the table rows.
func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
