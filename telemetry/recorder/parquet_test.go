package recorder

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/parquetfile"
	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestParquetEqualsJSONL: the same records through a JSONL and a Parquet recorder (one fleet
// key) read back the same: every record's JSON, and the trace and records as format/trace
// reads them (from the first arrival: a JSONL file's zero is when it was opened, a Parquet
// file's its first row's arrival, each to the microsecond). The partitions are tested in parquetfile.
func TestParquetEqualsJSONL(t *testing.T) {
	t.Parallel()
	key := []byte(strings.Repeat("k", MinFleetKey))
	js, jdir := open(t, Options{Records: true, Trace: true, FleetKey: key})
	pq, pdir := open(t, Options{Records: true, Trace: true, FleetKey: key, Format: FormatParquet, RotateRows: 7})
	t0 := time.Now()
	const n = 40
	for i := range n {
		body := chat("m", strings.Repeat("word ", i*60), 16)
		mk := func() *record.Record {
			rc := rec(i, t0.Add(time.Duration(i)*97*time.Millisecond+time.Duration(i)*time.Nanosecond), body)
			rc.InputTokens = int64(i * 60)
			rc.Tenant = []string{"", "acme", "globex"}[i%3]
			if i%4 == 0 {
				rc.SessionID = "s"
				rc.DurationMs = 12.5
			}
			if i%5 == 0 {
				v := 3.25
				rc.TTFTMs = &v
				rc.Model = record.UnknownModel
			}
			return rc
		}
		js.Submit(mk(), nil)
		pq.Submit(mk(), nil)
	}
	closeRec(t, js)
	closeRec(t, pq)
	if st := pq.Stats(); st.Written != n || st.Errors != 0 {
		t.Fatalf("parquet recorder stats %+v", st)
	}

	// Every record, field for field.
	var want []string
	f, _ := os.Open(filesOf(t, jdir, recfile.KindRecords)[0])
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record.Record
		json.Unmarshal(sc.Bytes(), &r)
		r.Start = r.Start.UTC()
		b, _ := json.Marshal(&r)
		want = append(want, string(b))
	}
	f.Close()
	files, err := parquetfile.Files(pdir, recfile.KindRecords)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 || !strings.Contains(files[0], string(filepath.Separator)+"hour=") {
		t.Fatalf("files %v: want 40 rows in hourly partitions, rolled every 7 rows", files)
	}
	var got []string
	for _, p := range files {
		rd, err := parquetfile.Open[parquetfile.RecordRow](p)
		if err != nil {
			t.Fatal(err)
		}
		for {
			row, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(row.Record())
			got = append(got, string(b))
		}
		rd.Close()
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("parquet records from %v\n%s\nwant\n%s", files, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, kind := range []string{recfile.KindTrace, recfile.KindRecords} {
		jr, _, err := trace.ReadFile(filesOf(t, jdir, kind)[0], trace.Options{})
		if err != nil {
			t.Fatal(err)
		}
		pr, info, err := trace.ReadFile(pdir, trace.Options{Format: map[string]trace.Format{recfile.KindTrace: trace.FormatMooncake, recfile.KindRecords: trace.FormatRecords}[kind]})
		if err != nil {
			t.Fatal(err)
		}
		if info.Lines != n {
			t.Errorf("%s: %d rows counted, want %d", kind, info.Lines, n)
		}
		trace.Rebase(jr)
		trace.Rebase(pr)
		if len(jr) != len(pr) {
			t.Fatalf("%s: %d requests from Parquet, %d from JSONL", kind, len(pr), len(jr))
		}
		// Both files keep arrivals to the microsecond, truncated, but from different zeros (the
		// JSONL file's opening, the Parquet file's first row), so after rebasing an arrival
		// may differ by the one microsecond that truncation from another zero can lose.
		for i := range jr {
			if d := jr[i].Timestamp - pr[i].Timestamp; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s request %d: arrival %v from Parquet, %v from JSONL", kind, i, pr[i].Timestamp, jr[i].Timestamp)
			}
			pr[i].Timestamp = jr[i].Timestamp
			if !reflect.DeepEqual(jr[i], pr[i]) {
				t.Errorf("%s request %d read from Parquet:\n%+v\nfrom JSONL:\n%+v", kind, i, pr[i], jr[i])
			}
		}
	}
}
