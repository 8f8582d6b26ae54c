package recorder

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestFilesHoldExactlyWhatWasSubmitted writes n records to all three files and reads them back
// with format/trace's readers: same count, same lengths, same ids, formats detected.
func TestFilesHoldExactlyWhatWasSubmitted(t *testing.T) {
	r, dir := open(t, Options{Records: true, Trace: true, Payloads: true})
	t0 := time.Now()
	const n = 50
	var bodies []string
	for i := range n {
		body := chat("m", strings.Repeat("word ", i*40), 16)
		rc := rec(i, t0.Add(time.Duration(i)*time.Millisecond), body)
		rc.InputTokens = int64(i * 40)
		bodies = append(bodies, string(body))
		if !r.Submit(rc, nil) {
			t.Fatalf("record %d dropped with an empty queue", i)
		}
	}
	closeRec(t, r)
	if st := r.Stats(); st.Written != n || st.Dropped != 0 || st.Errors != 0 || st.SkippedPayloads != 0 {
		t.Fatalf("stats %+v, want %d written and nothing else", st, n)
	}

	recs, _ := readAll(t, dir, recfile.KindRecords, trace.FormatRecords)
	tr, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	pl, _ := readAll(t, dir, recfile.KindPayloads, trace.FormatPayloads)
	if len(recs) != n || len(tr) != n || len(pl) != n {
		t.Fatalf("read %d records, %d trace lines, %d payloads; want %d each", len(recs), len(tr), len(pl), n)
	}
	for i := range n {
		if tr[i].InputLength != i*40 || tr[i].OutputLength != 5+i {
			t.Errorf("trace line %d: %+v", i, tr[i])
		}
		if got, want := len(tr[i].HashIDs), trace.Blocks(i*40, trace.BlockTokens); got != want {
			t.Errorf("trace line %d: %d hash ids for %d tokens, want %d", i, got, i*40, want)
		}
		if recs[i].OutputLength != 5+i {
			t.Errorf("record %d: output %d", i, recs[i].OutputLength)
		}
		if string(pl[i].Payload) != bodies[i] {
			t.Errorf("payload %d is not the body sent:\n got %s", i, pl[i].Payload)
		}
		if pl[i].InputLength != i*40 {
			t.Errorf("payload %d: input_tokens %d", i, pl[i].InputLength)
		}
	}
}

// TestModes checks that the folder is created 0700 and every file 0600, whatever the umask
// allows: recordings can hold prompts.
func TestModes(t *testing.T) {
	r, dir := open(t, Options{Records: true, Trace: true, Payloads: true})
	r.Submit(rec(0, time.Now(), chat("m", "hi", 1)), nil)
	closeRec(t, r)
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("%d files, want one per kind", len(ents))
	}
	for _, e := range ents {
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
}

// TestDropsAreCounted fills the queue while no writer runs: what does not fit is dropped and
// counted, Submit never blocks, and the queued records are written once the writer starts.
func TestDropsAreCounted(t *testing.T) {
	r, err := newRecorder(Options{Dir: t.TempDir(), Records: true, Queue: 3})
	if err != nil {
		t.Fatal(err)
	}
	queued := 0
	for i := range 10 {
		if r.Submit(rec(i, time.Now(), nil), nil) {
			queued++
		}
	}
	if queued != 3 || r.Stats().Dropped != 7 {
		t.Fatalf("queued %d, dropped %d; want 3 and 7", queued, r.Stats().Dropped)
	}
	go r.w.run()
	closeRec(t, r)
	if r.Submit(rec(99, time.Now(), nil), nil) {
		t.Error("a closed recorder accepted a record")
	}
	if st := r.Stats(); st.Written != 3 || st.Dropped != 8 {
		t.Errorf("stats %+v; want 3 written and 8 dropped (one after Close)", st)
	}
	if err := r.Close(context.Background()); err != nil {
		t.Errorf("a second Close failed: %v", err)
	}
}

// TestFlushEverySecond runs on synctest's fake clock: a line stays in the buffer until the next
// flush tick and is on disk (where a crash of the process no longer loses it) right after.
func TestFlushEverySecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		r, err := New(Options{Dir: dir, Records: true})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		r.Submit(rec(0, time.Now(), nil), nil)
		synctest.Wait()
		path := filesOf(t, dir, recfile.KindRecords)[0]
		if st, _ := os.Stat(path); st.Size() != 0 {
			t.Fatalf("the line reached the file before a flush (%d bytes): nothing is buffered", st.Size())
		}
		time.Sleep(900 * time.Millisecond) // the tick at 1 s
		synctest.Wait()
		if st, _ := os.Stat(path); st.Size() == 0 {
			t.Fatal("the line was not on disk one flush interval after it was written")
		}
		closeRec(t, r)
	})
}

// TestRotateByAge rotates on the fake clock: after RotateAge the next line goes to a new file
// named by its own start time, and both files read back.
func TestRotateByAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		r, err := New(Options{Dir: dir, Records: true, Trace: true, RotateAge: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		r.Submit(rec(0, time.Now(), nil), nil)
		time.Sleep(61 * time.Second)
		synctest.Wait()
		r.Submit(rec(1, time.Now(), nil), nil)
		closeRec(t, r)
		for _, kind := range []string{recfile.KindRecords, recfile.KindTrace} {
			files := filesOf(t, dir, kind)
			if len(files) != 2 {
				t.Fatalf("%s: %d files after one rotation, want 2: %v", kind, len(files), files)
			}
			for _, f := range files {
				rs, _, err := trace.ReadFile(f, trace.Options{})
				if err != nil || len(rs) != 1 {
					t.Errorf("%s: %d requests, err %v; want 1", f, len(rs), err)
				}
			}
		}
	})
}

// TestRotateBySize keeps every file under RotateBytes (when a line fits), loses no line, and
// restarts hash-id numbering in each trace file so every file replays on its own.
func TestRotateBySize(t *testing.T) {
	r, dir := open(t, Options{Records: true, Trace: true, Payloads: true, RotateBytes: 4 << 10})
	long := strings.Repeat("the keeper climbs the stairs ", 400) // > 512 tokens
	t0 := time.Now()
	const n = 40
	for i := range n {
		rc := rec(i, t0, chat("m", long, 8))
		rc.InputTokens = 2000
		r.Submit(rc, nil)
	}
	closeRec(t, r)
	for _, kind := range []string{recfile.KindRecords, recfile.KindTrace, recfile.KindPayloads} {
		files := filesOf(t, dir, kind)
		if len(files) < 2 {
			t.Fatalf("%s: %d files; 40 lines of over 100 bytes should rotate at 4 KiB", kind, len(files))
		}
		total := 0
		first := int64(-1)
		for _, f := range files {
			st, _ := os.Stat(f)
			rs, _, err := trace.ReadFile(f, trace.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > 4<<10 && len(rs) > 1 {
				t.Errorf("%s is %d bytes with %d lines; over the 4 KiB limit", f, st.Size(), len(rs))
			}
			total += len(rs)
			if kind == recfile.KindTrace && len(rs) > 0 {
				if first < 0 {
					first = rs[0].HashIDs[0]
				}
				if rs[0].HashIDs[0] != first {
					t.Errorf("%s starts at hash id %d, want %d: the same prompt keeps its ids across rotations", f, rs[0].HashIDs[0], first)
				}
			}
		}
		if total != n {
			t.Errorf("%s: %d lines across files, want %d", kind, total, n)
		}
	}
}

// TestTornLastLine appends half a line to each file, as a crash mid-write leaves it: the reader
// accepts the files, reports the torn line and returns every complete one.
func TestTornLastLine(t *testing.T) {
	r, dir := open(t, Options{Records: true, Trace: true, Payloads: true})
	for i := range 5 {
		r.Submit(rec(i, time.Now(), chat("m", "hello", 4)), nil)
	}
	closeRec(t, r)
	for _, kind := range []string{recfile.KindRecords, recfile.KindTrace, recfile.KindPayloads} {
		p := filesOf(t, dir, kind)[0]
		data, _ := os.ReadFile(p)
		lines := strings.SplitAfter(string(data), "\n")
		torn := lines[0][:len(lines[0])/2]
		if err := os.WriteFile(p, append(data, torn...), 0o600); err != nil {
			t.Fatal(err)
		}
		rs, info, err := trace.ReadFile(p, trace.Options{})
		if err != nil || len(rs) != 5 || info.Torn != 6 {
			t.Errorf("%s: %d requests, torn line %d, err %v; want 5, 6, nil", kind, len(rs), info.Torn, err)
		}
	}
}

// TestSessionAndModelInTrace checks the optional trace fields and that a record without a
// session id writes none.
func TestSessionAndModelInTrace(t *testing.T) {
	r, dir := open(t, Options{Trace: true})
	a := rec(0, time.Now(), nil)
	a.SessionID = `conv-"7"`
	b := rec(1, time.Now(), nil)
	r.Submit(a, nil)
	r.Submit(b, nil)
	closeRec(t, r)
	rs, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if len(rs) != 2 || rs[0].SessionID != `conv-"7"` || rs[1].SessionID != "" {
		t.Fatalf("sessions %+v", rs)
	}
	data, _ := os.ReadFile(filesOf(t, dir, recfile.KindTrace)[0])
	if !strings.Contains(string(data), `"model": "m"`) {
		t.Errorf("no model in the trace: %s", data)
	}
}

// TestNewFailsOnUnwritableFolder reports a folder that cannot be used when the recorder
// starts, not on the first request.
func TestNewFailsOnUnwritableFolder(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Dir: file, Records: true}); err == nil {
		t.Error("a file was accepted as the recording folder")
	}
	if _, err := New(Options{Dir: t.TempDir()}); err == nil {
		t.Error("a recorder with no file kind was accepted")
	}
}

// TestNoRecordIsTouched checks Submit keeps the record as it is (the pipeline's ring shares it).
func TestNoRecordIsTouched(t *testing.T) {
	r, _ := open(t, Options{Records: true, Trace: true, Payloads: true, Redact: Redact{Text: true}})
	body := chat("m", "secret words", 4)
	orig := string(body)
	rc := rec(0, time.Now(), body)
	r.Submit(rc, nil)
	closeRec(t, r)
	if string(body) != orig || string(rc.RequestBody) != orig {
		t.Error("redaction modified the request body in place")
	}
}

// TestMirrorCopiesOnlyInRecords writes live requests and their mirror copies: the records file
// holds both, the trace and the payloads the live requests only, so a replay of the trace
// does not send every mirrored request twice.
func TestMirrorCopiesOnlyInRecords(t *testing.T) {
	r, dir := open(t, Options{Records: true, Trace: true, Payloads: true})
	t0 := time.Now()
	for i := range 4 {
		live := rec(i, t0.Add(time.Duration(i)*time.Millisecond), chat("m", "hello there", 8))
		cp := *live
		cp.Class = record.ClassMirror
		r.Submit(live, nil)
		r.Submit(&cp, nil)
	}
	closeRec(t, r)
	recs, _ := readAll(t, dir, recfile.KindRecords, trace.FormatRecords)
	tr, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	pl, _ := readAll(t, dir, recfile.KindPayloads, trace.FormatPayloads)
	if len(recs) != 8 || len(tr) != 4 || len(pl) != 4 {
		t.Errorf("%d records, %d trace lines, %d payloads; want 8 (live and mirror), 4, 4", len(recs), len(tr), len(pl))
	}
}

// TestRotatedFileStartsAtTheArrivalThatOpensIt: a record handed to the recorder well after it
// arrived (a pipeline that lags under load) and whose line rotates the trace opens the new file
// at its arrival, so its line has timestamp 0 at the right absolute moment. With the file
// opened when the record was processed, the line's absolute time would shift by the lag, and
// merging instances' traces would put it after requests that arrived later.
func TestRotatedFileStartsAtTheArrivalThatOpensIt(t *testing.T) {
	r, dir := open(t, Options{Trace: true, RotateBytes: 1})
	r.Submit(rec(0, time.Now(), nil), nil) // fills the first file: every later line rotates
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	arrived := time.Now()
	time.Sleep(300 * time.Millisecond) // the lag between arrival and the recorder
	r.Submit(rec(1, arrived, nil), nil)
	closeRec(t, r)
	files := filesOf(t, dir, recfile.KindTrace)
	if len(files) != 2 {
		t.Fatalf("trace files %v, want two (the second line rotates)", files)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(files[1]), "trace-"), ".jsonl")
	start, err := time.Parse("20060102T150405.000Z", name)
	if err != nil {
		t.Fatal(err)
	}
	if d := start.Sub(arrived.UTC().Truncate(time.Millisecond)); d.Abs() > time.Millisecond {
		t.Errorf("the rotated file starts at %v, %v from the arrival of the request that opened it (%v)", start, d, arrived.UTC())
	}
}
