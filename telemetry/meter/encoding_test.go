package meter

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"
	"time"

	"github.com/andybalholm/brotli"

	"github.com/llmtap/llmtap/internal/bomb"
	"github.com/llmtap/llmtap/telemetry/record"
)

// encodedWrites compresses each event of events in coding, flushing after each so that every
// write decodes to exactly one event (as a streaming server does), and returns the writes.
func encodedWrites(t testing.TB, coding string, events []string) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Flush() error
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "br":
		w = brotli.NewWriter(&buf)
	}
	var out [][]byte
	for i, ev := range events {
		if _, err := w.Write([]byte(ev)); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if i == len(events)-1 {
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, bytes.Clone(buf.Bytes()))
		buf.Reset()
	}
	return out
}

// feedEncoded runs writes through a meter whose response carries Content-Encoding coding,
// write i at 10*(i+1) ms.
func feedEncoded(coding string, writes [][]byte) *record.Record {
	return feedEncodedWith(Options{}, "text/event-stream", coding, writes)
}

// feedEncodedWith is feedEncoded with the given options and content type.
func feedEncodedWith(opts Options, contentType, coding string, writes [][]byte) *record.Record {
	pool := NewPool(opts)
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(10*(i+1)) * time.Millisecond) }
	m := pool.Get(t0, "/v1/chat/completions")
	m.Headers(200, http.Header{"Content-Type": {contentType}, "Content-Encoding": {coding}}, t0)
	for i, w := range writes {
		m.Write(w, at(i))
	}
	rec := m.Finish(at(len(writes)), "", "")
	m.Release()
	Finalize(rec, nil)
	return rec
}

func TestEncodedStreams(t *testing.T) {
	events := []string{chunk(`{"content":"a"}`), chunk(`{"content":"b"}`), chunk(`{"content":"c"}`), "data: [DONE]\n\n"}
	gz := encodedWrites(t, "gzip", events)
	br := encodedWrites(t, "br", events)
	size := func(ws [][]byte) (n int64) {
		for _, w := range ws {
			n += int64(len(w))
		}
		return n
	}
	// split cuts every write in two, so events straddle writes.
	split := func(ws [][]byte) (out [][]byte) {
		for _, w := range ws {
			out = append(out, w[:len(w)/2], w[len(w)/2:])
		}
		return out
	}
	tests := []struct {
		name       string
		coding     string
		writes     [][]byte
		wantErr    string
		wantEvents int
		wantMal    int
		wantTTFT   float64 // ms; 0 when none
	}{
		{"gzip decodes each flushed event at the time of its write", "gzip", gz, "", 3, 0, 10},
		{"br decodes each flushed event at the time of its write", "br", br, "", 3, 0, 10},
		{"gzip split mid-write still frames whole events", "gzip", split(gz), "", 3, 0, 20},
		{"a gzip body cut before [DONE] is truncated, not malformed", "gzip", gz[:2], record.ErrTruncated, 2, 0, 10},
		{"a body that is not gzip counts one malformed event and stops decoding", "gzip",
			[][]byte{[]byte("data: not gzip\n\n"), []byte("more")}, record.ErrMalformed, 0, 1, 0},
		{"corrupt gzip after good events keeps what was measured", "gzip",
			[][]byte{gz[0], gz[1], bytes.Repeat([]byte{0xff}, 64)}, record.ErrTruncated, 2, 1, 10},
		{"garbage br counts one malformed event", "br",
			[][]byte{bytes.Repeat([]byte{0xff, 0x00, 0x13}, 40)}, record.ErrMalformed, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := feedEncoded(tc.coding, tc.writes)
			if rec.Error != tc.wantErr || rec.ContentEvents != tc.wantEvents || rec.Malformed != tc.wantMal {
				t.Fatalf("error %q (%s), %d content events, %d malformed; want %q, %d, %d",
					rec.Error, rec.ErrorMsg, rec.ContentEvents, rec.Malformed, tc.wantErr, tc.wantEvents, tc.wantMal)
			}
			if rec.Bytes != size(tc.writes) {
				t.Errorf("%d bytes counted, %d written: the wire size is what counts", rec.Bytes, size(tc.writes))
			}
			if tc.wantTTFT > 0 && (rec.TTFTMs == nil || !near(*rec.TTFTMs, tc.wantTTFT)) {
				t.Errorf("ttft %v, want %v ms", rec.TTFTMs, tc.wantTTFT)
			}
		})
	}
}

// TestUnsupportedEncodingIsMeasuredAsIs checks that a coding the meter cannot decode (zstd)
// leaves the body measured as it reads: an identity body labelled oddly still measures.
func TestUnsupportedEncodingIsMeasuredAsIs(t *testing.T) {
	for _, coding := range []string{"", "identity", "zstd"} {
		rec := feedEncoded(coding, [][]byte{[]byte(chunk(`{"content":"a"}`)), []byte("data: [DONE]\n\n")})
		if rec.Error != "" || rec.ContentEvents != 1 {
			t.Errorf("coding %q: error %q, %d content events; want none, 1", coding, rec.Error, rec.ContentEvents)
		}
	}
}

// TestInflateBombIsBounded feeds a br body that expands far beyond maxInflateRatio (16 MiB of
// zeros compress to a few bytes; gzip cannot exceed ~1032:1, so only br can get there): the
// meter stops decoding it (one malformed event) instead of spending unbounded CPU.
func TestInflateBombIsBounded(t *testing.T) {
	var buf bytes.Buffer
	zw := brotli.NewWriter(&buf)
	_, _ = zw.Write(make([]byte, 16<<20))
	_ = zw.Close()
	if int64(16<<20) <= int64(buf.Len())*maxInflateRatio+inflateSlack {
		t.Fatalf("the test body (%d bytes) does not exceed the bound", buf.Len())
	}
	rec := feedEncoded("br", [][]byte{buf.Bytes()})
	if rec.Malformed != 1 || rec.Error != record.ErrMalformed || rec.DecodeStopped != DecodeStoppedRatio {
		t.Fatalf("%d malformed, error %q, decode_stopped %q; want 1, malformed, ratio: the bomb must stop decoding",
			rec.Malformed, rec.Error, rec.DecodeStopped)
	}
}

// repetitiveStream returns a chat stream of n identical content events and [DONE], gzip-encoded
// without a flush: the best ratio a real stream can reach (a streaming server flushes every
// event, which costs it most of that ratio).
func repetitiveStream(t testing.TB, n int) (plain, encoded []byte) {
	t.Helper()
	var b bytes.Buffer
	for range n {
		b.WriteString(chunk(`{"content":"token"}`))
	}
	b.WriteString("data: [DONE]\n\n")
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	_, _ = zw.Write(b.Bytes())
	_ = zw.Close()
	return b.Bytes(), z.Bytes()
}

// splitEvery cuts b into writes of size bytes.
func splitEvery(b []byte, size int) (out [][]byte) {
	for len(b) > size {
		out = append(out, b[:size])
		b = b[size:]
	}
	return append(out, b)
}

// TestInflateBounds checks the two bounds on decoding (ratio and size) by the bytes decoded,
// not by time: a gzip bomb (deflate's maximum ratio, which the old 1100:1 bound let through in
// full) stops after a couple of MiB; a body past the size bound is decoded to the bound
// exactly; a real stream compressed 200:1 or more, and a non-streaming body past what the
// meter keeps, are handled as their kind requires.
func TestInflateBounds(t *testing.T) {
	plain, encoded := repetitiveStream(t, 20000)
	if ratio := len(plain) / len(encoded); ratio < 200 {
		t.Fatalf("the repetitive stream compresses %d:1, want at least 200:1 for this test", ratio)
	}
	gz := bomb.Gzip(64) // 64 MiB decoded
	tests := []struct {
		name        string
		opts        Options
		contentType string
		writes      [][]byte
		wantStop    string
		maxDecoded  int64 // the decoded bytes must not exceed this
		minDecoded  int64 // nor fall short of this
		wantEvents  int
		wantErr     string
	}{
		{"a gzip bomb at deflate's maximum ratio stops by ratio within a few MiB", Options{}, "text/event-stream",
			splitEvery(gz, 16<<10), DecodeStoppedRatio, 4 << 20, 1 << 20, 0, record.ErrMalformed},
		{"a real stream compressed 200:1 or more is measured in full", Options{}, "text/event-stream",
			splitEvery(encoded, 1<<10), "", int64(len(plain)), int64(len(plain)), 20000, ""},
		{"a stream past MaxDecoded is decoded to the bound exactly and not called truncated", Options{MaxDecoded: 64 << 10}, "text/event-stream",
			splitEvery(encoded, 1<<10), DecodeStoppedSize, 64 << 10, 64 << 10, (64 << 10) / len(chunk(`{"content":"token"}`)), ""},
		{"a complete body is decoded only as far as the meter keeps it", Options{MaxBody: 1 << 20}, "application/json",
			splitEvery(gz[:len(gz)/8], 16<<10), DecodeStoppedSize, 1<<20 + 1, 1<<20 + 1, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := feedEncodedWith(tc.opts, tc.contentType, "gzip", tc.writes)
			if rec.DecodeStopped != tc.wantStop || rec.DecodedBytes > tc.maxDecoded || rec.DecodedBytes < tc.minDecoded {
				t.Errorf("decode_stopped %q after %d decoded bytes; want %q after %d to %d",
					rec.DecodeStopped, rec.DecodedBytes, tc.wantStop, tc.minDecoded, tc.maxDecoded)
			}
			if rec.ContentEvents != tc.wantEvents || rec.Error != tc.wantErr {
				t.Errorf("%d content events, error %q (%s); want %d, %q", rec.ContentEvents, rec.Error, rec.ErrorMsg, tc.wantEvents, tc.wantErr)
			}
			var sent int64
			for _, w := range tc.writes {
				sent += int64(len(w))
			}
			if rec.Bytes != sent {
				t.Errorf("%d bytes counted, %d written: every byte passes and is counted", rec.Bytes, sent)
			}
		})
	}
}

// FuzzInflate feeds arbitrary bytes, split at an arbitrary point, as a gzip and a br body:
// the meter must neither panic nor hang, must count every byte written, and must not decode
// past its bounds (ratio and size).
func FuzzInflate(f *testing.F) {
	events := []string{chunk(`{"content":"a"}`), "data: [DONE]\n\n"}
	f.Add(bytes.Join(encodedWrites(f, "gzip", events), nil), 3)
	f.Add(bytes.Join(encodedWrites(f, "br", events), nil), 5)
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), 2)
	f.Add(bomb.Gzip(2), 100)
	opts := Options{MaxDecoded: 1 << 20}
	f.Fuzz(func(t *testing.T, body []byte, cut int) {
		if cut < 0 || cut > len(body) {
			cut = len(body) / 2
		}
		for _, coding := range []string{"gzip", "br"} {
			rec := feedEncodedWith(opts, "text/event-stream", coding, [][]byte{body[:cut], body[cut:]})
			if rec.Bytes != int64(len(body)) {
				t.Fatalf("%s: %d bytes counted, %d written", coding, rec.Bytes, len(body))
			}
			if rec.DecodedBytes > min(opts.MaxDecoded, int64(len(body))*maxInflateRatio+inflateSlack) {
				t.Fatalf("%s: %d bytes decoded from %d, past the bounds", coding, rec.DecodedBytes, len(body))
			}
		}
	})
}

func BenchmarkMeterGzipStream(b *testing.B) {
	events := make([]string, 256)
	for i := range events {
		events[i] = chunk(`{"content":"token"}`)
	}
	events = append(events, "data: [DONE]\n\n")
	writes := encodedWrites(b, "gzip", events)
	pool := NewPool(Options{})
	h := http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"gzip"}}
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		m := pool.Get(t0, "/v1/chat/completions")
		m.Headers(200, h, t0)
		for _, w := range writes {
			m.Write(w, t0)
		}
		m.Finish(t0, "", "")
		m.Release()
	}
}
