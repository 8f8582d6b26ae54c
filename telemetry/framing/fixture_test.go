package framing

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The captures under testdata/ (described in testdata/README.md) are
// real Ollama v0.6.5 responses, with one .timed.jsonl line per socket read.

// sseCaptures are the OpenAI-compatible captures, which are Server-Sent Events.
var sseCaptures = []string{"chat", "chat_sampled", "completions"}

// ndjsonCaptures are the native-API captures, which are newline-delimited JSON.
var ndjsonCaptures = []string{"native-api-chat"}

// read is one socket read of a capture.
type read struct {
	at   int64 // microseconds since the request was written
	data []byte
}

// loadCapture returns the reads of a capture and its whole body, after checking that the reads
// add up to the body byte for byte.
func loadCapture(tb testing.TB, name string) (reads []read, body []byte) {
	tb.Helper()
	body, err := os.ReadFile(filepath.Join("testdata", name+".txt"))
	if err != nil {
		tb.Fatal(err)
	}
	f, err := os.Open(filepath.Join("testdata", name+".timed.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var all []byte
	for sc.Scan() {
		var r struct {
			TMs  float64 `json:"t_ms"`
			N    int     `json:"n"`
			Data string  `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if len(r.Data) != r.N {
			tb.Fatalf("%s: read of %d bytes holds %d", name, r.N, len(r.Data))
		}
		reads = append(reads, read{at: int64(math.Round(r.TMs * 1000)), data: []byte(r.Data)})
		all = append(all, r.Data...)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(all, body) {
		tb.Fatalf("%s: the reads do not add up to the body", name)
	}
	return reads, body
}

// readAt returns the time of the read that holds byte off of the body.
func readAt(tb testing.TB, reads []read, off int) int64 {
	tb.Helper()
	start := 0
	for _, r := range reads {
		if off < start+len(r.data) {
			return r.at
		}
		start += len(r.data)
	}
	tb.Fatalf("offset %d is past the end", off)
	return 0
}

// rec is an Event copied out of the callback, comparable with ==.
type rec struct {
	Type, Data, ID string
	At             int64
	Size           int
	Over           bool
}

// recorder returns a callback that appends a copy of every event to dst.
func recorder(dst *[]rec) func(*Event) {
	return func(e *Event) {
		*dst = append(*dst, rec{
			Type: string(e.Type), Data: string(e.Data), ID: string(e.ID),
			At: e.At, Size: e.Size, Over: e.Oversized,
		})
	}
}

// withoutAt returns evs with At zeroed, to compare runs fed at different times.
func withoutAt(evs []rec) []rec {
	out := make([]rec, len(evs))
	for i, e := range evs {
		e.At = 0
		out[i] = e
	}
	return out
}
