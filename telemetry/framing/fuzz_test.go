package framing

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets feed an input whole and split into writes, and compare both runs with a
// reference implementation written here the obvious way: split the whole input into lines, then
// apply the rules line by line, allocating freely. The first input byte picks the limits and
// seeds the split points, so the fuzzer explores splits of the same stream by mutating it.

// bufCap returns the capacity of the splitter's buffer, for the tests of the memory bound.
func (s *NDJSON) bufCap() int { return cap(s.buf) }

// bufCap returns the capacity of the parser's buffers, for the tests of the memory bound.
func (s *SSE) bufCap() int { return cap(s.dataBuf) + cap(s.typ) + cap(s.id) + cap(s.tmp) }

// maxInputLen keeps one fuzz iteration fast; the reference is linear anyway.
const maxInputLen = 64 << 10

// fuzzLimits are the event limits the fuzzer chooses from: tiny ones make every path through
// the limit checks reachable with short inputs, the default one checks normal behaviour.
var fuzzLimits = []int{1, 3, 8, 32, 200, DefaultMaxEvent}

// splitPoints cuts in into writes: one byte each, or pseudo-random lengths from 0 (an empty
// write) up to 8 or 256 bytes, seeded by seed.
func splitPoints(in []byte, seed byte) [][]byte {
	// A xorshift32 generator; its state is odd, so never the state 0 it would stick in.
	x := uint32(seed)*2654435761 | 1
	next := func() uint32 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return x
	}
	var span uint32
	switch seed % 3 {
	case 0:
		span = 1
	case 1:
		span = 9
	default:
		span = 257
	}
	var chunks [][]byte
	for len(in) > 0 {
		n := 1
		if span > 1 {
			n = int(next() % span)
		}
		if n == 0 && len(chunks) > 0 && len(chunks[len(chunks)-1]) == 0 {
			n = 1 // at most one empty write in a row, so the loop always advances
		}
		n = min(n, len(in))
		chunks = append(chunks, in[:n])
		in = in[n:]
	}
	return chunks
}

// writeIndex maps offsets in the input to the index of the chunk that holds them, which the
// fuzz runs pass as the write's time.
func writeIndex(chunks [][]byte) func(off int) int64 {
	ends := make([]int, len(chunks)) // ends[i] is the offset just past chunk i
	end := 0
	for i, c := range chunks {
		end += len(c)
		ends[i] = end
	}
	return func(off int) int64 {
		// The first chunk ending after off holds it; empty chunks end where their predecessor
		// does, so they are never chosen.
		i, _ := slices.BinarySearch(ends, off+1)
		return int64(i)
	}
}

// refEvent is an event of the reference implementation, with the offset of its first byte.
type refEvent struct {
	rec
	off int
}

// refSSE is the reference SSE parser. It returns the events, whether the stream was truncated,
// the number of comment lines and the last valid retry.
func refSSE(in []byte, max, maxField int) (evs []refEvent, truncated bool, comments int, retry int64, retryOK bool) {
	base := 0
	if bytes.HasPrefix(in, []byte("\xEF\xBB\xBF")) {
		in, base = in[3:], 3
	}
	var data []string
	var typ, id string
	over, started := false, false
	size, off := 0, 0
	pos := 0
	for {
		end := bytes.IndexAny(in[pos:], "\r\n")
		if end < 0 {
			if pos < len(in) && in[pos] == ':' {
				comments++
			}
			return evs, pos < len(in) || len(data) > 0, comments, retry, retryOK
		}
		end += pos
		line := string(in[pos:end])
		size += len(line) + 1
		switch {
		case line == "":
			if len(data) > 0 {
				d := strings.Join(data, "\n")
				o := over || len(d) > max
				if o {
					d = ""
				}
				evs = append(evs, refEvent{rec{Type: typ, Data: d, ID: id, Size: size, Over: o}, off})
			}
			data, typ, over, started, size = nil, "", false, false, 0
		case line[0] == ':':
			comments++
		default:
			if !started {
				started, off = true, base+pos
			}
			name, val, _ := strings.Cut(line, ":")
			val = strings.TrimPrefix(val, " ")
			switch name {
			case "data":
				data = append(data, val)
			case "event":
				typ = val
				if len(val) > maxField {
					typ, over = "", true
				}
			case "id":
				if len(val) <= maxField && !strings.Contains(val, "\x00") {
					id = val
				}
			case "retry":
				if len(val) <= maxField && val != "" && strings.Trim(val, "0123456789") == "" {
					if n, err := strconv.ParseInt(val, 10, 64); err == nil {
						retry, retryOK = n, true
					}
				}
			}
		}
		pos = end + 1
		if in[end] == '\r' && pos < len(in) && in[pos] == '\n' {
			pos++
			size++
		}
	}
}

// refNDJSON is the reference NDJSON splitter.
func refNDJSON(in []byte, max int) (evs []refEvent, truncated bool, blank int) {
	for pos := 0; pos < len(in); {
		line, size := in[pos:], len(in)-pos
		last := true
		if j := bytes.IndexByte(in[pos:], '\n'); j >= 0 {
			line, size, last = in[pos:pos+j], j+1, false
		}
		content := strings.TrimSuffix(string(line), "\r")
		if strings.Trim(content, " \t\r") == "" {
			blank++
		} else {
			ev := refEvent{rec{Data: content, Size: size}, pos}
			if len(content) > max {
				ev.Data, ev.Over = "", true
			}
			evs = append(evs, ev)
			truncated = last
		}
		pos += size
	}
	return evs, truncated, blank
}

// withAt gives reference events the times a run with the given writes would give them.
func withAt(ref []refEvent, at func(int) int64) []rec {
	out := make([]rec, len(ref))
	for i, e := range ref {
		e.At = at(e.off)
		out[i] = e.rec
	}
	return out
}

// addSeeds adds the captures and hand-written edge cases to a fuzz corpus.
func addSeeds(f *testing.F, captures []string, edges []string) {
	for _, name := range captures {
		body, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body)
	}
	for _, e := range edges {
		f.Add([]byte(e))
	}
}

func FuzzSSE(f *testing.F) {
	addSeeds(f, append(slices.Clone(sseCaptures), ndjsonCaptures...), []string{
		"data: a\n\n",
		"\x01data: a\r\n\r\ndata: b\rdata: c\r\r",
		"\x02\xEF\xBB\xBFdata: a\n\n",
		"\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n",
		"\xEF\xBB",
		"\x05: keep\n\nevent: x\nid: 1\ndata\ndata:  y\n\nid: a\x00b\ndata: z\n\n",
		"\x04retry: 10\nretry: x\nretry:\nretry: 99999999999999999999\ndata: r\n\n",
		"\x07event: abcdefghijklmnop\ndata: x\n\nid: abcdefghijklmnop\ndata: y\n\n",
		"\x03data: 0123456789012345678901234567890123456789\ndata: more\n\ndata: ok\n\n",
		"\x00dataxyz: q\nData: x\ndata : y\nfoo\n:\n\n",
		"\x06data: a\r",
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxInputLen {
			return
		}
		var seed byte
		if len(in) > 0 {
			seed = in[0]
		}
		max := fuzzLimits[int(seed)%len(fuzzLimits)]
		maxField := []int{1, 4, 16, maxFieldLen}[int(seed/8)%4]
		ref, refTrunc, refComments, refRetry, refRetryOK := refSSE(in, max, maxField)

		run := func(chunks [][]byte) []rec {
			var evs []rec
			s := NewSSE(max, func(e *Event) {
				if len(e.Data) > max {
					t.Fatalf("data of %d bytes over the limit %d", len(e.Data), max)
				}
				if e.Oversized && len(e.Data) > 0 {
					t.Fatal("an oversized event carries data")
				}
				recorder(&evs)(e)
			})
			s.maxField = maxField
			bound := max + 3*maxField
			for i, c := range chunks {
				s.Write(c, int64(i))
				if got := s.bufCap(); got > bound {
					t.Fatalf("buffers hold %d bytes, bound %d", got, bound)
				}
			}
			st := s.Stats()
			if st.Events != int64(len(evs)) || st.Comments != int64(refComments) || st.Bytes != int64(len(in)) {
				t.Errorf("stats %+v: %d events, %d comments, %d bytes", st, len(evs), refComments, len(in))
			}
			if ms, ok := s.Retry(); ms != refRetry || ok != refRetryOK {
				t.Errorf("retry %d,%v; reference %d,%v", ms, ok, refRetry, refRetryOK)
			}
			if trunc := s.Close(); trunc != refTrunc {
				t.Errorf("truncated %v, reference %v", trunc, refTrunc)
			}
			return evs
		}

		wholeChunks := [][]byte{in}
		whole := run(wholeChunks)
		if want := withAt(ref, writeIndex(wholeChunks)); !slices.Equal(whole, want) {
			t.Fatalf("whole input:\ngot  %+v\nwant %+v", whole, want)
		}
		chunks := splitPoints(in, seed)
		split := run(chunks)
		if want := withAt(ref, writeIndex(chunks)); !slices.Equal(split, want) {
			t.Fatalf("split into %d writes:\ngot  %+v\nwant %+v", len(chunks), split, want)
		}
	})
}

func FuzzNDJSON(f *testing.F) {
	addSeeds(f, append(slices.Clone(ndjsonCaptures), sseCaptures...), []string{
		"{\"a\":1}\n{\"b\":2}\n",
		"\x01a\r\n\r\n \t\n  b\r\r\n",
		"\x02abcdefghij\nab\n    \n      x\n",
		"\x03{\"done\":true}",
		"\x04   ",
		"\x05\r",
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > maxInputLen {
			return
		}
		var seed byte
		if len(in) > 0 {
			seed = in[0]
		}
		max := fuzzLimits[int(seed)%len(fuzzLimits)]
		ref, refTrunc, refBlank := refNDJSON(in, max)

		run := func(chunks [][]byte) []rec {
			var evs []rec
			s := NewNDJSON(max, func(e *Event) {
				if len(e.Data) > max {
					t.Fatalf("line of %d bytes over the limit %d", len(e.Data), max)
				}
				recorder(&evs)(e)
			})
			for i, c := range chunks {
				s.Write(c, int64(i))
				if got := s.bufCap(); got > max+1 {
					t.Fatalf("buffer holds %d bytes, bound %d", got, max+1)
				}
			}
			if trunc := s.Close(); trunc != refTrunc {
				t.Errorf("truncated %v, reference %v", trunc, refTrunc)
			}
			st := s.Stats()
			if st.Events != int64(len(evs)) || st.Blank != int64(refBlank) || st.Bytes != int64(len(in)) {
				t.Errorf("stats %+v: %d events, %d blank, %d bytes", st, len(evs), refBlank, len(in))
			}
			return evs
		}

		wholeChunks := [][]byte{in}
		whole := run(wholeChunks)
		if want := withAt(ref, writeIndex(wholeChunks)); !slices.Equal(whole, want) {
			t.Fatalf("whole input:\ngot  %+v\nwant %+v", whole, want)
		}
		chunks := splitPoints(in, seed)
		split := run(chunks)
		if want := withAt(ref, writeIndex(chunks)); !slices.Equal(split, want) {
			t.Fatalf("split into %d writes:\ngot  %+v\nwant %+v", len(chunks), split, want)
		}
	})
}
