package recorder

import (
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/tokens"
)

// TestQueueBytesShedsTraceRows fills a recorder whose writer has not started with long
// prompts: bodies are held only while they fit QueueBytes, the rest are queued without
// theirs (records line only), and once the writer runs every record is counted exactly once
// and every trace row is in the file or counted shed. The bound is the byte-cap logic, not
// timing: nothing is written until every record was submitted.
func TestQueueBytesShedsTraceRows(t *testing.T) {
	t.Parallel()
	const (
		sent     = 40
		bodySize = 4 << 10
		capBytes = 5*bodySize + bodySize/2 // room for 5 bodies
		queue    = 30                      // records beyond it are dropped whole
	)
	dir := t.TempDir()
	r, err := newRecorder(Options{Dir: dir, Records: true, Trace: true, Queue: queue, QueueBytes: capBytes})
	if err != nil {
		t.Fatal(err)
	}
	body := chat("m", strings.Repeat("x", bodySize-60), 8)
	for i := range sent {
		rc := rec(i, time.Now(), body)
		rc.InputTokens = 600
		r.Submit(rc, nil)
		if q := r.QueuedBodyBytes(); q > capBytes {
			t.Fatalf("after record %d the queue holds %d bytes of bodies, over its bound %d", i, q, capBytes)
		}
	}
	st := r.Stats()
	if st.Shed != 0 || st.Dropped != sent-queue {
		t.Fatalf("before the writer ran: %+v; want 0 shed yet (counted once written) and %d dropped", st, sent-queue)
	}
	go r.w.run()
	closeRec(t, r)
	st = r.Stats()
	if st.Written != 5 || st.Shed != queue-5 || st.Dropped != sent-queue || st.Failed != 0 {
		t.Errorf("stats %+v; want 5 written in full, %d shed, %d dropped", st, queue-5, sent-queue)
	}
	if got := st.Written + st.Shed + st.Dropped + st.Failed + st.Filtered; got != sent {
		t.Errorf("written+shed+dropped+failed+filtered = %d, want %d sent", got, sent)
	}
	if q := r.QueuedBodyBytes(); q != 0 {
		t.Errorf("%d bytes of bodies still counted queued after Close", q)
	}
	rows, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	recs, _ := readAll(t, dir, recfile.KindRecords, trace.FormatRecords)
	if uint64(len(rows)) != st.Written {
		t.Errorf("%d trace rows written, want %d (written in full)", len(rows), st.Written)
	}
	if uint64(len(recs)) != st.Written+st.Shed {
		t.Errorf("%d records lines, want %d (a shed record keeps its records line)", len(recs), st.Written+st.Shed)
	}
	if uint64(len(rows))+st.Shed+st.Dropped != sent {
		t.Errorf("trace rows: %d written + %d shed + %d dropped != %d sent", len(rows), st.Shed, st.Dropped, sent)
	}
}

// TestQueueBytesTraceOnly: with no records file a shed record has nothing left to write; it is
// counted shed at once and never queued.
func TestQueueBytesTraceOnly(t *testing.T) {
	t.Parallel()
	r, err := newRecorder(Options{Dir: t.TempDir(), Trace: true, QueueBytes: 1500})
	if err != nil {
		t.Fatal(err)
	}
	body := chat("m", strings.Repeat("y", 900), 8)
	for i := range 3 {
		r.Submit(rec(i, time.Now(), body), nil)
	}
	if st, n := r.Stats(), len(r.ch); st.Shed != 2 || n != 1 {
		t.Errorf("shed %d, queued %d; want 2 shed and 1 queued", st.Shed, n)
	}
	go r.w.run()
	closeRec(t, r)
	if st := r.Stats(); st.Written != 1 || st.Shed != 2 {
		t.Errorf("stats %+v; want 1 written, 2 shed", st)
	}
}

// TestQueueBytesUnderALiveWriter offers long prompts faster than the writer tokenizes them:
// whatever the writer's pace, the bodies held never pass the bound and every trace row is
// written or counted.
func TestQueueBytesUnderALiveWriter(t *testing.T) {
	t.Parallel()
	const sent = 60
	capBytes := int64(3 << 16)
	r, dir := open(t, Options{Records: true, Trace: true, QueueBytes: capBytes})
	body := chat("m", strings.Repeat("The keeper trims the wick. ", 64<<10/27), 8)
	for i := range sent {
		rc := rec(i, time.Now(), body)
		rc.InputTokens = 16 << 10
		r.Submit(rc, nil)
		if q := r.QueuedBodyBytes(); q > capBytes {
			t.Fatalf("after record %d the queue holds %d bytes of bodies, over %d", i, q, capBytes)
		}
	}
	closeRec(t, r)
	st := r.Stats()
	rows, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if uint64(len(rows))+st.Shed+st.Dropped+st.Failed != sent || uint64(len(rows)) != st.Written {
		t.Errorf("%d trace rows, stats %+v: rows + shed + dropped + failed != %d sent", len(rows), st, sent)
	}
}

// byteTokens is a tokenizer of one token per byte, standing for a handler's own tokenizer.
type byteTokens struct{}

func (byteTokens) Count(text []byte) (int, error) { return len(text), nil }
func (byteTokens) Name() string                   { return "hf:bytes" }
func (byteTokens) IDs(text []byte) ([]uint, error) {
	out := make([]uint, len(text))
	for i, b := range text {
		out[i] = uint(b)
	}
	return out, nil
}

var _ tokens.Encoder = byteTokens{}

// TestHashIDsUseTheRecordsTokenizer: the block ids of a record counted with the handler's
// tokenizer are cut from that tokenizer's tokens (here one per byte, so a 700-byte prompt is
// two blocks), not from o200k_base's.
func TestHashIDsUseTheRecordsTokenizer(t *testing.T) {
	t.Parallel()
	r, dir := open(t, Options{Trace: true, FleetKey: testKey})
	prompt := strings.Repeat("abcdefg ", 100)[:700]
	rc := rec(0, time.Now(), []byte(`{"model":"m","prompt":"`+prompt+`"}`))
	rc.API = "openai.completions"
	rc.InputTokens = 700
	r.Submit(rc, byteTokens{})
	closeRec(t, r)
	rows, _ := readAll(t, dir, recfile.KindTrace, trace.FormatMooncake)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	ids, _ := byteTokens{}.IDs([]byte(prompt))
	want := newPrefixIDs(testKey).assign(nil, ids, 2)
	o200k, _ := tokens.IDs([]byte(prompt))
	other := newPrefixIDs(testKey).assign(nil, o200k, 2)
	got := rows[0].HashIDs
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("hash_ids %v, want %v (the record's tokenizer's blocks); o200k_base's would be %v", got, want, other)
	}
}
