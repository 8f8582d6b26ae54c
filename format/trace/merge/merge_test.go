package merge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
)

// The in-memory merge `trace merge` was before it streamed (kept here as the reference the
// streaming merge must equal): every row read, sorted stably by absolute arrival, rebased to
// the earliest, hash ids renumbered densely in order of first appearance.

type refRequest struct {
	at  time.Time
	req trace.Request
}

func refMergeTraces(paths []string, skipBad bool) ([]trace.Request, error) {
	var all []refRequest
	for _, p := range paths {
		start, err := traceFileStart(p)
		if err != nil {
			return nil, err
		}
		reqs, _, err := trace.ReadFile(p, trace.Options{Format: trace.FormatMooncake, SkipBad: skipBad})
		if err != nil {
			return nil, err
		}
		for _, r := range reqs {
			all = append(all, refRequest{at: start.Add(r.Timestamp), req: r})
		}
	}
	slices.SortStableFunc(all, func(a, b refRequest) int { return a.at.Compare(b.at) })
	out := make([]trace.Request, len(all))
	for i, m := range all {
		r := m.req
		r.Timestamp = m.at.Sub(all[0].at)
		out[i] = r
	}
	renumber(out)
	return out, nil
}

// renumber replaces hash ids by 0, 1, 2 … in order of first appearance.
func renumber(reqs []trace.Request) {
	dense := map[int64]int64{}
	for i := range reqs {
		ids := make([]int64, len(reqs[i].HashIDs))
		for j, id := range reqs[i].HashIDs {
			d, ok := dense[id]
			if !ok {
				d = int64(len(dense))
				dense[id] = d
			}
			ids[j] = d
		}
		reqs[i].HashIDs = ids
	}
}

type refLine struct {
	at   time.Time
	line []byte
	ms   int
}

func refMergeLines(kind string, paths []string) ([]byte, error) {
	var all []refLine
	var p fastjson.Parser
	for _, path := range paths {
		_, start, err := recfile.Parse(path)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			r, err := parseMergeLine(&p, kind, start, line)
			if err != nil {
				return nil, err
			}
			all = append(all, refLine{at: r.at, line: line, ms: int(r.ms)})
		}
	}
	slices.SortStableFunc(all, func(a, b refLine) int { return a.at.Compare(b.at) })
	var out bytes.Buffer
	for _, m := range all {
		line := m.line
		if kind == "payloads" {
			ms := strconv.AppendFloat([]byte(trace.PayloadLineStart), float64(m.at.Sub(all[0].at).Microseconds())/1000, 'f', -1, 64)
			line = append(ms, m.line[m.ms:]...)
		}
		out.Write(line)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

// nearSorted writes files of one kind as the recorder writes them: rows in order of their
// request's end, each request lasting up to maxDur, arrivals a few ms apart with ties, in
// files of staggered starts (one file per instance and rotation). It returns the paths.
func nearSorted(t *testing.T, kind string, files, rows int, maxDur time.Duration, seed uint64) []string {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, 9))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var paths []string
	for f := range files {
		start := t0.Add(time.Duration(f) * 350 * time.Millisecond) // a multiple of 7 ms: ties across files
		type row struct {
			arrival, end time.Duration
			text         string
		}
		var rs []row
		for j := range rows {
			arrival := time.Duration(j/2) * 7 * time.Millisecond // pairs of equal arrivals
			dur := time.Duration(rng.Int64N(int64(maxDur)))
			var text string
			switch kind {
			case "trace":
				ids := []string{fmt.Sprint(rng.Int64N(1 << 53)), fmt.Sprint(rng.Int64N(4))}
				sess := ""
				if j%5 == 0 {
					sess = fmt.Sprintf(`, "session_id": "s%d", "delay": 3`, j%3)
				}
				text = fmt.Sprintf(`{"timestamp": %s, "input_length": %d, "output_length": %d, "hash_ids": [%s]%s, "model": "m%d"}`,
					strconv.FormatFloat(float64(arrival.Microseconds())/1000, 'f', -1, 64), 1+rng.IntN(900), rng.IntN(90), strings.Join(ids, ", "), sess, f)
			case "records":
				text = fmt.Sprintf(`{"request_id": "f%d-%d", "start": %q, "model": "m"}`, f, j, start.Add(arrival).Format(time.RFC3339Nano))
			case "payloads":
				text = fmt.Sprintf(`{"timestamp_ms": %s, "request_id": "f%d-%d", "payload": {"model": "m"}}`,
					strconv.FormatFloat(float64(arrival.Microseconds())/1000, 'f', -1, 64), f, j)
			}
			rs = append(rs, row{arrival, arrival + dur, text})
		}
		slices.SortStableFunc(rs, func(a, b row) int { return int(a.end - b.end) })
		var b strings.Builder
		for _, r := range rs {
			b.WriteString(r.text + "\n")
		}
		p := filepath.Join(dir, recfile.Name(kind, start, ".jsonl"))
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// runMerge merges paths with opt and returns the output and the error.
func runMerge(opt Options, paths ...string) ([]byte, error) {
	m, err := Open(paths, opt)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	var out bytes.Buffer
	_, err = m.Write(&out)
	return out.Bytes(), err
}

// TestStreamMergeEqualsInMemory: on near-sorted files of every kind (rows written at their
// request's end, ties across and within files), the streaming merge writes what the in-memory
// merge wrote: the same rows in the same order at the same rebased times, record lines byte
// for byte, payload lines with the same timestamps; trace hash ids are the files' own (keyed
// ids are not renumbered), and renumbering them as the in-memory merge did gives its ids.
func TestStreamMergeEqualsInMemory(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		paths := nearSorted(t, "trace", 4, 300, 2*time.Second, seed)
		want, err := refMergeTraces(paths, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := runMerge(Options{Window: 2 * time.Second}, paths...)
		if err != nil {
			t.Fatal(err)
		}
		reqs, _, err := trace.ReadFile(writeTemp(t, "trace-20261201T100000.000Z.jsonl", got), trace.Options{Format: trace.FormatMooncake})
		if err != nil {
			t.Fatal(err)
		}
		inputIDs := map[int64]bool{}
		for _, p := range paths {
			rs, _, _ := trace.ReadFile(p, trace.Options{})
			for _, r := range rs {
				for _, id := range r.HashIDs {
					inputIDs[id] = true
				}
			}
		}
		for _, r := range reqs {
			for _, id := range r.HashIDs {
				if !inputIDs[id] {
					t.Fatalf("seed %d: merged id %d is not an id of the files", seed, id)
				}
			}
		}
		renumber(reqs)
		if a, b := mooncake(t, reqs), mooncake(t, want); !bytes.Equal(a, b) {
			t.Fatalf("seed %d: the streaming merge differs from the in-memory merge:\n%.600s\nwant\n%.600s", seed, a, b)
		}
		for _, kind := range []string{"records", "payloads"} {
			paths := nearSorted(t, kind, 3, 200, time.Second, seed)
			want, err := refMergeLines(kind, paths)
			if err != nil {
				t.Fatal(err)
			}
			got, err := runMerge(Options{Window: time.Second}, paths...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d: the streaming %s merge differs from the in-memory one:\n%.600s\nwant\n%.600s", seed, kind, got, want)
			}
		}
	}
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mooncake(t *testing.T, reqs []trace.Request) []byte {
	t.Helper()
	var b bytes.Buffer
	w := trace.NewMooncakeWriter(&b, trace.WriterOptions{})
	for _, r := range reqs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestStreamMergeWindow: a file out of order by more than --window stops the merge at the row
// that broke it (file and line, naming --window) instead of writing it out of order; a longer
// window merges it.
func TestStreamMergeWindow(t *testing.T) {
	t.Parallel()
	paths := nearSorted(t, "trace", 2, 200, 3*time.Second, 7)
	_, err := runMerge(Options{Window: 100 * time.Millisecond}, paths...)
	if err == nil || !strings.Contains(err.Error(), "--window 100ms") || !strings.Contains(err.Error(), ".jsonl:") {
		t.Fatalf("merge with a window shorter than the requests: %v", err)
	}
	if _, err := runMerge(Options{Window: 3 * time.Second}, paths...); err != nil {
		t.Fatal(err)
	}
}

// TestStreamMergeBounded: the merge holds only the rows of its reorder windows; past its bound
// (maxMergeHeld, here lowered) it stops naming the bound and --window rather than growing.
// With a window the rows need, the bytes held stay far below the input's.
func TestStreamMergeBounded(t *testing.T) {
	t.Parallel()
	paths := nearSorted(t, "trace", 3, 2000, 50*time.Millisecond, 3)
	var info trace.Info
	m, err := traceInputs(paths, false, &info)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.window = 50 * time.Millisecond
	n, err := writeTraceMerge(m, io.Discard, trace.WriterOptions{})
	if err != nil || n != 6000 {
		t.Fatalf("%d rows, %v", n, err)
	}
	if all := 6000 * rowSize; m.peak > all/10 {
		t.Errorf("held at most %d bytes of rows, a tenth of all of them is %d", m.peak, all/10)
	}
	m2, err := traceInputs(paths, false, &info)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.close()
	m2.window, m2.maxHeld = time.Hour, 100*rowSize
	if _, err := writeTraceMerge(m2, io.Discard, trace.WriterOptions{}); err == nil || !strings.Contains(err.Error(), "MiB (--window 1h0m0s)") {
		t.Fatalf("an hour's window over a bound of 100 rows: %v", err)
	}
}

// FuzzMergeLines: any bytes in a records or payloads file give merged lines or an error naming
// the file and line, never a panic; a payload line that is taken keeps everything after its
// timestamp byte for byte.
func FuzzMergeLines(f *testing.F) {
	f.Add([]byte(`{"timestamp_ms": 12.5, "request_id": "r", "payload": {"a": 1}}` + "\n"))
	f.Add([]byte(`{"start": "2026-12-01T21:15:30.25Z", "model": "m"}` + "\n{\"start\": 1}\n"))
	f.Add([]byte("{\"timestamp_ms\": -1, \"x\": 1}\n{\"timestamp_ms\": 1e300,\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []string{"records", "payloads"} {
			p := filepath.Join(dir, kind+"-20261201T211530.250Z.jsonl")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := runMerge(Options{SkipBad: true}, p)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) || !strings.Contains(err.Error(), p) {
					t.Fatalf("error %v does not name %s", err, p)
				}
				continue
			}
			sc := bufio.NewScanner(bytes.NewReader(out))
			sc.Buffer(nil, math.MaxInt32)
			for sc.Scan() {
				line := sc.Bytes()
				if kind == "payloads" && !bytes.HasPrefix(line, []byte(trace.PayloadLineStart)) {
					t.Fatalf("merged payload line %q lost its prefix", line)
				}
				rest := line
				if kind == "payloads" {
					rest = line[bytes.IndexByte(line, ','):]
				}
				if !bytes.Contains(data, rest) {
					t.Fatalf("merged line %q is not in the input", line)
				}
			}
		}
	})
}

// TestFileNames: a recording file's name gives its start, with or without the suffix the
// recorder adds when a name was taken.
func TestFileNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"trace-20261201T211530.250Z.jsonl":   "2026-12-01T21:15:30.25Z",
		"trace-20261201T211530.250Z-2.jsonl": "2026-12-01T21:15:30.25Z",
	} {
		if at, err := traceFileStart("/x/" + name); err != nil || at.Format(time.RFC3339Nano) != want {
			t.Errorf("%s: start %v %v, want %s", name, at, err, want)
		}
	}
	if _, err := traceFileStart("/x/records-20261201T211530.250Z.jsonl"); err == nil {
		t.Error("a records file taken as a trace file")
	}
}
