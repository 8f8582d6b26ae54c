package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/recorder"
)

// TestTraceMergeParquet: three instances' recordings written both as JSONL and as Parquet
// (one fleet key, the same records) merge to the same trace and the same records: every
// field equal, trace timestamps within the millisecond that JSONL file names keep of a
// file's start.
func TestTraceMergeParquet(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("f", recorder.MinFleetKey))
	root := t.TempDir()
	var jsonDirs, pqDirs []string
	var jss, pqs []*recorder.Recorder
	for inst := range 3 {
		jd, pd := filepath.Join(root, fmt.Sprint("json", inst)), filepath.Join(root, fmt.Sprint("pq", inst))
		jsonDirs, pqDirs = append(jsonDirs, jd), append(pqDirs, pd)
		js, err := recorder.New(recorder.Options{Dir: jd, Records: true, Trace: true, FleetKey: key})
		if err != nil {
			t.Fatal(err)
		}
		pq, err := recorder.New(recorder.Options{Dir: pd, Records: true, Trace: true, FleetKey: key, Format: recorder.FormatParquet, RotateRows: 5})
		if err != nil {
			t.Fatal(err)
		}
		jss, pqs = append(jss, js), append(pqs, pq)
	}
	// Every request arrives after each JSONL file opened (a JSONL trace writes an earlier
	// arrival at its file's start).
	t0 := time.Now().Add(100 * time.Millisecond)
	for inst := range 3 {
		js, pq := jss[inst], pqs[inst]
		for i := range 12 + inst {
			mk := func() *record.Record {
				body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": strings.Repeat("shared prefix words ", 200) + fmt.Sprint(i%4)}}})
				// Near-sorted as a recorder writes them: each request ends 0–40 ms after it began.
				return &record.Record{RequestID: fmt.Sprintf("i%d-%d", inst, i), Class: record.ClassLive, Model: "m",
					Path: "/v1/chat/completions", API: "openai.chat", Status: 200, Tenant: "t" + fmt.Sprint(i%2),
					Start:       t0.Add(time.Duration(i*30+inst*7)*time.Millisecond - time.Duration(i%3)*40*time.Millisecond + time.Duration(inst)*time.Microsecond),
					InputTokens: 600 + int64(i), InputTokensSource: record.SourceUsage, OutputTokens: int64(i), OutputTokensSource: record.SourceUsage,
					UsageOutputTokens: int64(i), DurationMs: 40, RequestBody: body}
			}
			js.Submit(mk(), nil)
			pq.Submit(mk(), nil)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := js.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := pq.Close(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	glob := func(kind string) []string {
		var out []string
		for _, d := range jsonDirs {
			m, _ := filepath.Glob(filepath.Join(d, kind+"-*.jsonl"))
			out = append(out, m...)
		}
		return out
	}

	jt, err := runTraceMerge(append([]string{"-o", "-"}, glob("trace")...)...)
	if err != nil {
		t.Fatal(err)
	}
	pt, err := runTraceMerge(append([]string{"-o", "-"}, pqDirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) []trace.Request {
		path := filepath.Join(t.TempDir(), "m.jsonl")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		reqs, _, err := trace.ReadFile(path, trace.Options{Format: trace.FormatMooncake})
		if err != nil {
			t.Fatal(err)
		}
		return reqs
	}
	a, b := read(jt), read(pt)
	if len(a) != 39 || len(b) != len(a) {
		t.Fatalf("merged %d rows from JSONL, %d from Parquet; want 39", len(a), len(b))
	}
	for i := range a {
		if d := a[i].Timestamp - b[i].Timestamp; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("row %d: timestamp %v from JSONL, %v from Parquet", i, a[i].Timestamp, b[i].Timestamp)
		}
		a[i].Timestamp, b[i].Timestamp = 0, 0
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("merged trace from Parquet\n%+v\nfrom JSONL\n%+v", b, a)
	}

	jr, err := runTraceMerge(append([]string{"-o", "-"}, glob("records")...)...)
	if err != nil {
		t.Fatal(err)
	}
	var recFiles []string
	for _, d := range pqDirs {
		m, _ := filepath.Glob(filepath.Join(d, "dt=*", "hour=*", "records-*.parquet"))
		recFiles = append(recFiles, m...)
	}
	pr, err := runTraceMerge(append([]string{"-o", "-"}, recFiles...)...)
	if err != nil {
		t.Fatal(err)
	}
	norm := func(b []byte) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r record.Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			r.Start = r.Start.UTC()
			s, _ := json.Marshal(&r)
			out = append(out, string(s))
		}
		return out
	}
	if x, y := norm(jr), norm(pr); len(x) != 39 || strings.Join(x, "\n") != strings.Join(y, "\n") {
		t.Fatalf("merged records from Parquet\n%s\nfrom JSONL\n%s", strings.Join(y, "\n"), strings.Join(x, "\n"))
	}
}

// runTraceMerge runs `llmtap trace merge ARGS` in-process and returns what it wrote to stdout.
func runTraceMerge(args ...string) ([]byte, error) {
	var out, errOut bytes.Buffer
	code, err := traceMain(&out, &errOut, append([]string{"merge"}, args...))
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, errOut.String())
	}
	return out.Bytes(), err
}
