package parquetfile

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/telemetry/record"
)

// randomRecord fills every serialized field of a record, each optional one absent about half
// the time, from rng.
func randomRecord(rng *rand.Rand, start time.Time) *record.Record {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	f := func() *float64 {
		if rng.IntN(2) == 0 {
			return nil
		}
		v := rng.Float64() * 1000
		return &v
	}
	i := func() int64 {
		if rng.IntN(2) == 0 {
			return 0
		}
		return rng.Int64N(1 << 40)
	}
	r := &record.Record{
		RequestID: pick("a", "req-1", "ü"), Class: pick(record.ClassLive, record.ClassShadow), Model: pick("m", record.UnknownModel),
		Path: "/v1/chat/completions", API: pick("openai-chat", "ollama"), Stream: rng.IntN(2) == 0,
		Status: pick0(rng, 0, 200, 503), Error: pick("", record.ErrHTTP), ErrorMsg: pick("", "boom"),
		Finish: pick("", "stop"), Start: start, SessionID: pick("", "s1"), Tenant: pick("", "acme"),
		HeadersMs: f(), TTFTMs: f(), TTFOMs: f(), TTSTMs: f(), RequestLatencyMs: f(), ITLMs: f(),
		InterChunkDropped: int(i() % 100), DurationMs: rng.Float64() * 1e4,
		InputTokens: i(), InputTokensSource: pick("", record.SourceUsage, record.SourceTokenizer),
		OutputTokens: i(), OutputTokensSource: pick("", record.SourceEvents),
		ReasoningTokens: i(), CachedTokens: i(), CacheWriteTokens: i(), UsageOutputTokens: int64(pick0(rng, -1, 0, 7)),
		Tokenizer: pick("", "o200k_base"), ContentEvents: int(i() % 1000), Events: int(i() % 1000),
		Malformed: int(i() % 9), Oversized: int(i() % 9), Choices: int(i() % 3), ToolCalls: rng.IntN(2) == 0,
		Refusal: rng.IntN(2) == 0, Bytes: i(), BytesFromClient: i(), DecodedBytes: i(),
		DecodeStopped: pick("", "ratio"), UsageInjection: pick("", record.UsageInjected),
	}
	if r.InputTokensSource == "" && rng.IntN(2) == 0 {
		r.InputTokens = 0
	}
	switch rng.IntN(3) {
	case 0:
		r.InterChunkMs = []float64{rng.Float64(), 0, 3}
	case 1:
		r.InterChunkMs = []float64{}
	}
	if rng.IntN(2) == 0 {
		r.GPU = &record.GPUUsage{UtilPercent: 50, PowerW: rng.Float64(), EnergyJ: 3, GPUSeconds: rng.Float64(), CoveredMs: 9, GPUs: 2}
	}
	if rng.IntN(2) == 0 {
		r.Cost = record.NewCost(rng.Float64(), record.BasisGPUHour, 10)
	}
	if rng.IntN(2) == 0 {
		r.ListCost = record.NewCost(rng.Float64(), record.BasisListPrice, 0)
	}
	if rng.IntN(2) == 0 {
		r.Server = &record.ServerTimings{Format: pick("", "tgi"), QueueMs: float64(i() % 5), InferenceMs: 1, PromptEvalCount: 3, EvalCount: i(), LoadMs: 1, PromptEvalMs: 2, EvalMs: 3, TotalMs: 4}
	}
	if rng.IntN(2) == 0 {
		r.Split = &record.TimeSplit{ConnectMs: f(), ProxyMs: f(), SendMs: f(), UpstreamHeadersMs: f(), UpstreamTTFTMs: f(),
			QueueMs: f(), QueueSource: pick("", "server"), LoadMs: f(), PrefillMs: f(), PrefillSource: pick("", "x"),
			DecodeMs: f(), DecodeSource: pick("", "y"), InferenceMs: f(), ServerTTFTMs: f(), NetworkMs: f(), TTFTDisagree: rng.IntN(2) == 0}
	}
	return r
}

func pick0(rng *rand.Rand, v ...int) int { return v[rng.IntN(len(v))] }

func jsonOf(t *testing.T, r *record.Record) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecordRoundTrip: every serialized field of a record survives a Parquet file: its JSON
// read back equals its JSON written, over 2,000 random records spread over three hours.
func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := NewWriter[RecordRow](WriterOptions{Dir: dir, Kind: recfile.KindRecords, RowGroupRows: 97})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 5, 14, 10, 59, 0, 123456789, time.UTC)
	want := map[string]string{}
	for n := range 2000 {
		r := randomRecord(rng, t0.Add(time.Duration(n)*3*time.Second))
		r.RequestID = r.RequestID + "-" + string(rune('a'+n%26)) + time.Duration(n).String()
		want[r.RequestID] = jsonOf(t, r)
		row := FromRecord(r)
		if err := w.Write(r.Start, 1000, func(time.Time) RecordRow { return row }); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := Files(dir, recfile.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		parts = append(parts, filepath.Dir(rel))
	}
	wantParts := []string{"dt=2026-05-14/hour=10", "dt=2026-05-14/hour=11", "dt=2026-05-14/hour=12"}
	if strings.Join(parts, " ") != strings.Join(wantParts, " ") {
		t.Fatalf("partitions %v, want %v", parts, wantParts)
	}
	got := 0
	for _, f := range files {
		rd, err := Open[RecordRow](f)
		if err != nil {
			t.Fatal(err)
		}
		if rd.Kind() != recfile.KindRecords || rd.Start().IsZero() {
			t.Errorf("%s: metadata kind %q start %v", f, rd.Kind(), rd.Start())
		}
		hour := rd.Start().Truncate(time.Hour)
		for {
			row, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got++
			r := row.Record()
			if !r.Start.Truncate(time.Hour).Equal(hour) {
				t.Errorf("%s: a row of %v in the file of hour %v", f, r.Start, hour)
			}
			if g := jsonOf(t, r); g != want[r.RequestID] {
				t.Fatalf("read back\n%s\nwant\n%s", g, want[r.RequestID])
			}
		}
		rd.Close()
	}
	if got != len(want) {
		t.Fatalf("read %d rows, want %d", got, len(want))
	}
}

// TestUnknownIsNull: what a record does not know is null in its row, never 0.
func TestUnknownIsNull(t *testing.T) {
	t.Parallel()
	row := FromRecord(&record.Record{UsageOutputTokens: -1, Start: time.Now()})
	if row.Status != nil || row.InputTokens != nil || row.OutputTokens != nil || row.UsageOutputTokens != nil ||
		row.TTFTMs != nil || row.GPU != nil || row.Cost != nil || row.Tenant != nil {
		t.Fatalf("unknowns written as values: %+v", row)
	}
	row = FromRecord(&record.Record{OutputTokens: 0, OutputTokensSource: record.SourceUsage, UsageOutputTokens: 0})
	if row.OutputTokens == nil || *row.OutputTokens != 0 || row.UsageOutputTokens == nil {
		t.Fatalf("a counted 0 written as null: %+v", row)
	}
}

// TestRoll: a file rolls at MaxRows within an hour; rows keep their file's timestamps.
func TestRoll(t *testing.T) {
	t.Parallel()
	// A second apart the files have distinct names; a microsecond apart all three start in
	// one millisecond, so Create suffixes them -1 and -2, and Files must still list them in
	// the order they were written.
	for _, step := range []time.Duration{time.Second, time.Microsecond} {
		t.Run(step.String(), func(t *testing.T) { testRoll(t, step) })
	}
}

func testRoll(t *testing.T, step time.Duration) {
	t.Parallel()
	dir := t.TempDir()
	w, err := NewWriter[TraceRow](WriterOptions{Dir: dir, Kind: recfile.KindTrace, MaxRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
	for n := range 25 {
		at := t0.Add(time.Duration(n) * step)
		if err := w.Write(at, 100, func(fs time.Time) TraceRow {
			return NewTraceRow(at, fs, TraceFields{InputLength: 600, HashIDs: []int64{int64(n), 2}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	files, _ := Files(dir, recfile.KindTrace)
	if len(files) != 3 {
		t.Fatalf("%d files, want 3 (25 rows, 10 a file): %v", len(files), files)
	}
	n := 0
	for _, f := range files {
		rd, err := Open[TraceRow](f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			row, err := rd.Next()
			if err != nil {
				break
			}
			at := rd.Start().Add(time.Duration(row.Timestamp * float64(time.Millisecond)))
			if !at.Equal(row.Start) || row.HashIDs[0] != int64(n) {
				t.Fatalf("%s row %d: start %v timestamp %v (file start %v) ids %v", f, n, row.Start, row.Timestamp, rd.Start(), row.HashIDs)
			}
			n++
		}
		rd.Close()
	}
	if n != 25 {
		t.Fatalf("read %d rows, want 25", n)
	}
}

// TestWrongKind: a trace file read as records is refused with its name.
func TestWrongKind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, _ := NewWriter[TraceRow](WriterOptions{Dir: dir, Kind: recfile.KindTrace})
	at := time.Now()
	w.Write(at, 1, func(fs time.Time) TraceRow { return NewTraceRow(at, fs, TraceFields{}) })
	w.Close()
	files, _ := Files(dir, recfile.KindTrace)
	if _, err := Open[RecordRow](files[0]); err == nil || !strings.Contains(err.Error(), "request_id") {
		t.Fatalf("err %v, want a missing request_id column", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.parquet"), []byte("PAR1 not really"), 0o600)
	if _, err := Open[RecordRow](filepath.Join(dir, "bad.parquet")); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Fatalf("err %v, want one naming the file", err)
	}
}
