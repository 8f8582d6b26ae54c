package llmtap_test

// The smaller cases of the fault matrix (issue 35): duplicate keys in a usage chunk, an
// upstream's forged llmtap Server-Timing entries, request bodies left out of the payload file,
// more timeline streams than an endpoint allows, and inject_usage on a response framed by a
// Content-Length. Each goes end to end through Caddy; none asserts on wall-clock time.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/telemetry/record"
)

// smallUsage is the usage chunk with a repeated completion_tokens: Go's encoding/json and
// Python's json read the last, 9.
const smallUsage = `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7,"total_tokens":10,"completion_tokens":9}}` + "\n\n"

// forgedTiming is what the upstream puts in its Server-Timing header and trailer: an entry
// that looks like llmtap's beside one of its own.
const forgedTiming = `llmtap;desc="out=999 (usage)", db;dur=5`

// smallStream is the upstream's event stream: two content events, a usage-only chunk, [DONE].
func smallStream(usage bool) string {
	s := sseEvent("a") + sseEvent("b")
	if usage {
		s += smallUsage
	}
	return s + sseDone
}

// smallUpstream answers by path: /dup streams smallStream with its usage chunk; /timing the
// same with the forged Server-Timing header and trailer; /cl the stream framed by a
// Content-Length, with the usage chunk only when the request asked for it (as OpenAI's servers
// do); anything else 200 "{}".
func smallUpstream(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	switch r.URL.Path {
	case "/dup/v1/chat/completions":
		_, _ = io.WriteString(w, smallStream(true))
	case "/timing/v1/chat/completions":
		w.Header().Set("Trailer", "Server-Timing")
		w.Header().Add("Server-Timing", forgedTiming)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, smallStream(true))
		w.Header().Set("Server-Timing", forgedTiming)
	case "/cl/v1/chat/completions":
		s := smallStream(bytes.Contains(body, []byte(`"include_usage":true`)))
		w.Header().Set("Content-Length", strconv.Itoa(len(s)))
		_, _ = io.WriteString(w, s)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}
}

func TestFaultsSmall(t *testing.T) {
	addr := serveLoopback(t, http.HandlerFunc(smallUpstream))
	payloads := t.TempDir()
	p, _ := loadProxy(t, "",
		site{body: "\tllmtap {\n\t\tserver_timing\n\t}\n\treverse_proxy " + addr},
		site{body: "\treverse_proxy " + addr},
		site{body: "\tllmtap {\n\t\tinject_usage\n\t}\n\treverse_proxy " + addr},
		site{body: fmt.Sprintf("\tllmtap {\n\t\trecord %s {\n\t\t\tpayloads\n\t\t\tmax_payload 1KiB\n\t\t}\n\t}\n\treverse_proxy %s", payloads, addr)},
		site{body: "\tllmtap_api {\n\t\tmax_streams 2\n\t}\n\tllmtap\n\treverse_proxy " + addr},
	)
	c := newClient(t)
	t.Run("usage with duplicate keys", func(t *testing.T) { smallDuplicateUsage(t, p, c) })
	t.Run("forged llmtap Server-Timing", func(t *testing.T) { smallServerTiming(t, p, c) })
	t.Run("inject_usage keeps a Content-Length", func(t *testing.T) { smallInjectLength(t, p, c) })
	t.Run("payload skips counted by reason", func(t *testing.T) { smallPayloadSkips(t, p, c, payloads) })
	t.Run("timeline streams capped", func(t *testing.T) { smallStreamCap(t, p) })
}

// smallPost sends body to url with request id id and returns the response, its body read.
func smallPost(t *testing.T, c *http.Client, url, id string, body []byte, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// smallDuplicateUsage: the record counts the output tokens the server's clients read (9), not
// the first of the repeated keys (7).
func smallDuplicateUsage(t *testing.T, p *proxy, c *http.Client) {
	_, got := smallPost(t, c, p.sites[0]+"/dup/v1/chat/completions", "small-dup", chatBody("m", 8, true, true), nil)
	if string(got) != smallStream(true) {
		t.Fatalf("the client got %q", got)
	}
	// The record is written when the handler ends its measurement, which may be after the
	// client has its last byte; other tests keep the process busy, so wait for it (bounded).
	r, ok := p.records(t)["small-dup"]
	for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		r, ok = p.records(t)["small-dup"]
	}
	if !ok {
		t.Fatal("no record of small-dup after 10 s")
	}
	if r.OutputTokens != 9 || r.OutputTokensSource != record.SourceUsage {
		t.Errorf("output tokens %d (%s), want 9 from the usage: the last of the repeated keys", r.OutputTokens, r.OutputTokensSource)
	}
}

// smallServerTiming: with server_timing, the client gets the upstream's Server-Timing entries
// less those named llmtap, in the header and in the trailer, and exactly one llmtap entry:
// llmtap's own. The plain proxy passes the forged entries, so the upstream did send them.
func smallServerTiming(t *testing.T, p *proxy, c *http.Client) {
	trailers := map[string]string{"TE": "trailers"}
	resp, got := smallPost(t, c, p.sites[0]+"/timing/v1/chat/completions", "small-timing", chatBody("m", 8, true, true), trailers)
	plain, _ := smallPost(t, c, p.sites[1]+"/timing/v1/chat/completions", "small-timing-plain", chatBody("m", 8, true, true), trailers)
	if string(got) != smallStream(true) {
		t.Fatalf("the client got %q", got)
	}
	if !strings.Contains(strings.Join(plain.Header.Values("Server-Timing"), ","), "llmtap;desc") {
		t.Fatalf("the plain proxy's client got no forged entry (header %q): the upstream is not what the test thinks", plain.Header.Values("Server-Timing"))
	}
	if h := resp.Header.Values("Server-Timing"); strings.Join(h, ",") != "db;dur=5" {
		t.Errorf("Server-Timing header %q, want only the upstream's db;dur=5", h)
	}
	all := strings.Join(resp.Trailer.Values("Server-Timing"), ", ")
	if n := strings.Count(all, "llmtap;desc="); n != 1 || strings.Contains(all, "out=999") {
		t.Errorf("Server-Timing trailer %q: want llmtap's own entry once and no forged one", all)
	}
	if !strings.Contains(all, "db;dur=5") {
		t.Errorf("Server-Timing trailer %q lost the upstream's db entry", all)
	}
}

// smallInjectLength: an injected request whose response is framed by a Content-Length reaches
// the client with that framing and length, and the client's SSE reading gives the events of
// the response without the usage chunk; the record has the server's count.
func smallInjectLength(t *testing.T, p *proxy, c *http.Client) {
	resp, got := smallPost(t, c, p.sites[2]+"/cl/v1/chat/completions", "small-cl", chatBody("m", 8, true, false), nil)
	want := smallStream(true)
	if resp.ContentLength != int64(len(want)) || len(resp.TransferEncoding) != 0 || len(got) != len(want) {
		t.Errorf("Content-Length %d, transfer encoding %q, %d bytes; want the upstream's framing: Content-Length %d",
			resp.ContentLength, resp.TransferEncoding, len(got), len(want))
	}
	if e, w := sseDataOf(string(got)), sseDataOf(smallStream(false)); strings.Join(e, "|") != strings.Join(w, "|") {
		t.Errorf("the client read the events %q, want those of the stream without its usage chunk %q", e, w)
	}
	r := p.records(t)["small-cl"]
	if r.UsageInjection != record.UsageInjected || r.OutputTokens != 9 {
		t.Errorf("usage injection %q, output tokens %d; want injected and the server's 9", r.UsageInjection, r.OutputTokens)
	}
}

// sseDataOf parses an event stream as an SSE client does (comments skipped, an event
// dispatched at a blank line when it has data) and returns each event's data.
func sseDataOf(s string) []string {
	var out, data []string
	for line := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		switch {
		case line == "":
			if len(data) > 0 {
				out = append(out, strings.Join(data, "\n"))
			}
			data = nil
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out
}

// smallPayloadSkips: bodies that are not one JSON object, and one over max_payload, are left
// out of the payload file and counted by reason on /metrics and in RecordingStatus.
func smallPayloadSkips(t *testing.T, p *proxy, c *http.Client, dir string) {
	before := map[string]float64{}
	for _, reason := range []string{"too_large", "not_object"} {
		before[reason] = p.metricValue(t, "llmtap_recorder_payloads_skipped_total", map[string]string{"reason": reason})
	}
	bodies := map[string][]byte{
		"small-array":   []byte(`[{"model":"m"}]`),
		"small-invalid": []byte(`{"model":"m",`),
		"small-large":   []byte(`{"model":"m","pad":"` + strings.Repeat("x", 2000) + `"}`),
		"small-ok":      []byte(`{"model":"m"}`),
	}
	for id, b := range bodies {
		smallPost(t, c, p.sites[3]+"/v1/chat/completions", id, b, nil)
	}
	waitIdle(t)
	want := map[string]float64{"too_large": 1, "not_object": 2}
	var got map[string]uint64
	api := llmtapv1connect.NewTapServiceClient(http.DefaultClient, p.admin)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := api.RecordingStatus(t.Context(), connect.NewRequest(&llmtapv1.RecordingStatusRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range res.Msg.GetRecordings() {
			if rec.GetDir() == dir {
				got = rec.GetPayloadsSkipped()
			}
		}
		if got["too_large"] == 1 && got["not_object"] == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the recorder writes off the request path
	}
	if got["too_large"] != 1 || got["not_object"] != 2 {
		t.Errorf("RecordingStatus payloads_skipped %v, want too_large 1, not_object 2", got)
	}
	for reason, n := range want {
		if d := p.metricValue(t, "llmtap_recorder_payloads_skipped_total", map[string]string{"reason": reason}) - before[reason]; d != n {
			t.Errorf("llmtap_recorder_payloads_skipped_total{reason=%q} rose by %v, want %v", reason, d, n)
		}
	}
}

// smallStreamCap: with max_streams 2, a third timeline stream is refused with
// resource_exhausted and counted while two are open; once one closes, another is accepted.
func smallStreamCap(t *testing.T, p *proxy) {
	api := llmtapv1connect.NewTapServiceClient(http.DefaultClient, p.sites[4])
	refusedBefore := streamsRefused(t, p)
	open := func(ctx context.Context) (*connect.ServerStreamForClient[llmtapv1.StreamTimelineResponse], error) {
		s, err := api.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
		if err != nil {
			return nil, err
		}
		if !s.Receive() { // the first window is sent at once: the stream is open
			return nil, s.Err()
		}
		return s, nil
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		if _, err := open(ctx); err != nil {
			t.Fatalf("stream %d of 2: %v", i+1, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := open(ctx)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "max_streams") {
		t.Fatalf("a third stream: %v, want resource_exhausted naming max_streams", err)
	}
	if d := streamsRefused(t, p) - refusedBefore; d != 1 {
		t.Errorf("llmtap_api_streams_refused_total rose by %v, want 1", d)
	}
	cancels[0]() // one client leaves: its stream ends on the server soon after
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		_, err := open(ctx)
		if err == nil {
			cancels = append(cancels, cancel)
			break
		}
		cancel()
		if connect.CodeOf(err) != connect.CodeResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("a stream after one closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamsRefused reads llmtap_api_streams_refused_total, a counter without labels (which
// metricValue does not parse), from /metrics.
func streamsRefused(t *testing.T, p *proxy) float64 {
	t.Helper()
	for line := range strings.Lines(string(p.adminGet(t, "/metrics"))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "llmtap_api_streams_refused_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("unparsable sample %q", line)
			}
			return f
		}
	}
	t.Fatal("no llmtap_api_streams_refused_total on /metrics")
	return 0
}
