package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestTraceGroundTruth(t *testing.T) {
	var log syncBuffer
	s, url := newTestServer(t, Config{LogEvents: true, RoleChunk: true, Reasoning: 2, EventLog: &log})
	_, body := post(t, url, chatPath,
		`{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":5}`,
		"X-Request-Id", "gt")
	sum := summarize(t, body)

	tr, ok := s.TraceByID("gt")
	if !ok {
		t.Fatal("no trace for the request id right after the response was read")
	}
	wantKinds := []string{KindHeaders, KindRole, KindReasoning, KindReasoning, KindContent, KindContent, KindContent, KindFinish, KindUsage, KindDone}
	var kinds []string
	for i, e := range tr.Events {
		kinds = append(kinds, e.Kind)
		if i > 0 && e.At.Before(tr.Events[i-1].At) {
			t.Errorf("event %d (%s) before its predecessor", i, e.Kind)
		}
		if e.At.Before(tr.Arrived) || e.Intended.Before(tr.Arrived) {
			t.Errorf("event %d (%s) before arrival", i, e.Kind)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Errorf("kinds %v\nwant  %v", kinds, wantKinds)
	}
	if tr.Status != 200 || !tr.Stream || tr.Canceled || tr.CompletionTokens != 5 || tr.ReasoningTokens != 2 ||
		tr.PromptTokens != sum.lastUsage.Usage.PromptTokens || tr.Path != chatPath || tr.Proto != "HTTP/1.1" {
		t.Errorf("trace summary wrong: %+v", tr)
	}
	if st := s.Stats(); st.Requests != 1 || st.Streams != 1 || st.Tokens != 5 || st.Events != int64(len(tr.Events)-1) || st.InFlight != 0 {
		t.Errorf("stats %+v: want 1 request, 1 stream, 5 tokens, %d events (all but headers), none in flight", st, len(tr.Events)-1)
	}

	// The event log line is written after the response; wait for it.
	var line traceLine
	deadline := time.Now().Add(5 * time.Second)
	for log.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := json.Unmarshal(bytes.TrimSpace(log.Bytes()), &line); err != nil {
		t.Fatalf("event log line: %v: %q", err, log.Bytes())
	}
	if line.RequestID != "gt" || line.ArrivedNS != tr.Arrived.UnixNano() || len(line.Events) != len(tr.Events) ||
		line.Events[4].Kind != KindContent || line.Events[4].TNS != tr.Events[4].At.UnixNano() || line.Events[4].Tokens != 1 {
		t.Errorf("event log line disagrees with the trace: %+v", line)
	}
}

func TestTraceUnaryAndErrors(t *testing.T) {
	s, url := newTestServer(t, Config{LogEvents: true})
	post(t, url, chatPath, `{"messages":[{"role":"user","content":"x"}],"max_tokens":4,"n":2}`, "X-Request-Id", "u")
	post(t, url, chatPath, `{"messages":[]}`, "X-Request-Id", "bad")
	post(t, url, chatPath, `{"messages":[{"role":"user","content":"x"}],"max_tokens":1}`) // generated id
	u, _ := s.TraceByID("u")
	if u.Stream || u.Status != 200 || len(u.Events) != 1 || u.Events[0].Kind != KindBody || u.Events[0].Tokens != 8 || u.CompletionTokens != 8 {
		t.Errorf("unary trace %+v: want one body event with 8 tokens", u)
	}
	bad, _ := s.TraceByID("bad")
	if bad.Status != 400 || len(bad.Events) != 1 || bad.Events[0].Kind != KindError {
		t.Errorf("bad-request trace %+v", bad)
	}
	if _, ok := s.TraceByID("mock-2"); !ok {
		t.Error("the third request has no trace under its generated id mock-2")
	}
	if n := len(s.Traces()); n != 3 {
		t.Errorf("%d traces, want 3", n)
	}
}

func TestLogsAreBounded(t *testing.T) {
	s, url := newTestServer(t, Config{LogEvents: true, LogLimit: 3})
	before := time.Now()
	for i := range 5 {
		post(t, url, completionsPath, `{"prompt":"x","max_tokens":1}`, "X-Request-Id", fmt.Sprint(i))
	}
	tr := s.Traces()
	if len(tr) != 3 || tr[0].RequestID != "2" || tr[2].RequestID != "4" {
		t.Errorf("kept %d traces starting at %q, want the newest three, oldest first", len(tr), tr[0].RequestID)
	}
	if _, ok := s.TraceByID("0"); ok {
		t.Error("evicted trace still found")
	}
	arr := s.Arrivals()
	if len(arr) != 3 || arr[0].Before(before) || arr[2].Before(arr[0]) {
		t.Errorf("arrivals %v: want three, in order, after the test started", arr)
	}
	if st := s.Stats(); st.TracesDropped != 2 || st.ArrivalsDropped != 2 {
		t.Errorf("dropped %d traces %d arrivals, want 2 and 2", st.TracesDropped, st.ArrivalsDropped)
	}
}

func TestEventLogPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, url := newTestServer(t, Config{EventLogPath: path})
	for range 2 {
		post(t, url, completionsPath, `{"prompt":"x","max_tokens":2,"stream":true}`)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Stats().InFlight != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("event log mode %v, want 0600", fi.Mode().Perm())
	}
	f, _ := os.Open(path)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var l traceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.CompletionTokens != 2 {
			t.Errorf("line %d: %v %+v", n, err, l)
		}
	}
	if n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	if len(s.Traces()) != 0 {
		t.Error("traces kept in memory without LogEvents")
	}
}

// syncBuffer is a bytes.Buffer safe for the server's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
