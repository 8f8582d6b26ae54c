package trace

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// The lines byte for byte as llmtap's recorder writes them (a session's later turn, a
// name that needs escaping, a body that is not UTF-8), so recordings keep their format.
func TestAppendLines(t *testing.T) {
	t.Parallel()
	s := Session{ID: `s<1>`, Delay: 1500*time.Microsecond + 999, HasDelay: true}
	tr := TraceLine{Timestamp: 1523250 * time.Microsecond, InputLength: 1100, OutputLength: -1,
		HashIDs: []int64{7, 8, 9}, Session: s, Model: "llama", Tenant: "a\"b"}
	want := `{"timestamp": 1523.25, "input_length": 1100, "output_length": 0, "hash_ids": [7, 8, 9], "session_id": "s\u003c1\u003e", "delay": 1.500999, "model": "llama", "tenant": "a\"b"}` + "\n"
	if got := string(AppendTraceLine(nil, &tr)); got != want {
		t.Errorf("trace line\n got %s\nwant %s", got, want)
	}
	tr = TraceLine{Timestamp: -time.Second, Session: Session{ID: "s"}}
	want = `{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": [], "session_id": "s"}` + "\n"
	if got := string(AppendTraceLine(nil, &tr)); got != want {
		t.Errorf("first turn\n got %s\nwant %s", got, want)
	}
	pl := PayloadLine{Timestamp: 2*time.Millisecond + 1234, RequestID: "r1", Path: "/v1/chat/completions",
		InputTokens: 3, OutputTokens: 4, Session: s, Body: []byte(`{"a":1}`)}
	want = `{"timestamp_ms": 2.001, "request_id": "r1", "path": "/v1/chat/completions", "input_tokens": 3, "output_tokens": 4, "session_id": "s\u003c1\u003e", "delay_ms": 1.5, "payload": {"a":1}}` + "\n"
	if got := string(AppendPayloadLine(nil, &pl)); got != want {
		t.Errorf("payload line\n got %s\nwant %s", got, want)
	}
	pl = PayloadLine{Body: []byte{'{', 0xff, '}'}}
	want = `{"timestamp_ms": 0, "request_id": "", "path": "", "input_tokens": 0, "output_tokens": 0, "payload_b64": "e/99"}` + "\n"
	if got := string(AppendPayloadLine(nil, &pl)); got != want {
		t.Errorf("binary payload line\n got %s\nwant %s", got, want)
	}
}

// Payload times are what the recorder and the merge wrote before they shared this writer:
// the microseconds as a float divided by 1000, shortest form.
func TestAppendPayloadStartMatchesFloat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200000 {
		d := time.Duration(rng.Int64N(int64(100 * 24 * time.Hour)))
		if i%2 == 0 {
			d = time.Duration(rng.Int64N(int64(time.Minute)))
		}
		want := strconv.AppendFloat([]byte(PayloadLineStart), float64(d.Microseconds())/1000, 'f', -1, 64)
		if got := AppendPayloadStart(nil, d); string(got) != string(want) {
			t.Fatalf("%d ns: %s, want %s", d, got, want)
		}
	}
}

// Writing a line into a buffer with room allocates nothing: the recorder's per-record path
// stays allocation-free.
func TestAppendLinesAllocs(t *testing.T) {
	tr := TraceLine{Timestamp: time.Second, InputLength: 900, HashIDs: []int64{1, 2}, Session: Session{ID: "s", HasDelay: true}, Model: "m"}
	pl := PayloadLine{Timestamp: time.Second, RequestID: "r", Path: "/p", Session: tr.Session, Body: []byte(`{"a":1}`)}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendTraceLine(buf[:0], &tr)
		buf = AppendPayloadLine(buf[:0], &pl)
	}); n != 0 {
		t.Errorf("%v allocations per pair of lines, want 0", n)
	}
}
