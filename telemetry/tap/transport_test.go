package tap_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// TestTransportMeasuresWhatTheClientReads sends three requests to the mock on loopback
// through the measuring Transport: one read to its end, one whose body is closed after its
// first line, and one without an Exchange. The first is measured in full (its tokens, class,
// id), the second ends as client_canceled when the client closes it, the third passes
// unmeasured; Ended and Closed run once each.
func TestTransportMeasuresWhatTheClientReads(t *testing.T) {
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = time.Millisecond, time.Millisecond
	mock, err := mock.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := mock.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); mock.Close() }()
	tp := tap.New(tap.Options{})
	defer tp.Close(context.Background())
	client := &http.Client{Transport: &tap.Transport{Base: http.DefaultTransport, Measure: tp}}
	body := `{"model":"m","stream":true,"max_completion_tokens":20,"messages":[{"role":"user","content":"hi"}]}`

	type calls struct{ ended, closed int }
	send := func(id string, x *tap.Exchange, readAll bool) {
		ctx := context.Background()
		if x != nil {
			ctx = tap.WithExchange(ctx, x)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if readAll {
			io.Copy(io.Discard, resp.Body)
		} else {
			bufio.NewReader(resp.Body).ReadString('\n')
		}
		resp.Body.Close()
	}
	var full, early calls
	status := 0
	send("full", &tap.Exchange{ID: "full", Class: record.ClassMirror, Body: []byte(body),
		Ended:  func(s int, failure string) { full.ended++; status = s },
		Closed: func() { full.closed++ }}, true)
	send("early", &tap.Exchange{ID: "early", Class: record.ClassBench, Body: []byte(body),
		Ended: func(int, string) { early.ended++ }, Closed: func() { early.closed++ }}, false)
	send("plain", nil, true)
	tp.Flush()

	byID := map[string]*record.Record{}
	for _, r := range tp.Recent().Last(10) {
		byID[r.RequestID] = r
	}
	if len(byID) != 2 || byID["plain"] != nil {
		t.Fatalf("records %v: want full and early only", byID)
	}
	if r := byID["full"]; !r.OK() || r.Class != record.ClassMirror || r.OutputTokens != 20 || r.Model != "m" {
		t.Errorf("full: %+v, want a complete mirror record of 20 tokens for model m", r)
	}
	if r := byID["early"]; r.Error != record.ErrCanceled || r.OutputTokens >= 20 {
		t.Errorf("early: error %q after %d tokens, want client_canceled before the end", r.Error, r.OutputTokens)
	}
	if full != (calls{1, 1}) || early != (calls{1, 1}) || status != 200 {
		t.Errorf("hooks: full %+v (status %d), early %+v; want each once", full, status, early)
	}
}
