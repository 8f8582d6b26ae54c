package llmtap_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// protoSeen is a RoundTripper that remembers the HTTP major versions of the responses it got,
// so a test can show which protocol version carried its calls.
type protoSeen struct {
	base   http.RoundTripper
	mu     sync.Mutex
	majors map[int]int
}

func (p *protoSeen) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(r)
	if err == nil {
		p.mu.Lock()
		if p.majors == nil {
			p.majors = map[int]int{}
		}
		p.majors[resp.ProtoMajor]++
		p.mu.Unlock()
	}
	return resp, err
}

func (p *protoSeen) only(t *testing.T, major int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.majors) != 1 || p.majors[major] == 0 {
		t.Errorf("responses by HTTP major version %v, want all HTTP/%d", p.majors, major)
	}
}

// h1Client speaks HTTP/1.1 only; h2cClient speaks HTTP/2 over cleartext (prior knowledge).
func h1Client(t *testing.T) (*http.Client, *protoSeen) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	ps := &protoSeen{base: tr}
	return &http.Client{Transport: ps}, ps
}

func h2cClient(t *testing.T) (*http.Client, *protoSeen) {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	ps := &protoSeen{base: tr}
	return &http.Client{Transport: ps}, ps
}

// apiSite is a site with the API on it (h2c allowed by apiGlobals), llmtap and the mock.
func apiSite(up *upstream, apiOpts string) site {
	return site{body: "\tllmtap_api" + apiOpts + "\n\tllmtap\n\treverse_proxy " + up.addr}
}

const apiGlobals = "\tservers {\n\t\tprotocols h1 h2 h2c\n\t}"

// sendChats sends n streamed chat requests for model through the proxy and fails on errors.
func sendChats(t *testing.T, c *http.Client, url, model string, n int) {
	t.Helper()
	for range n {
		resp, _, err := testkit.PostJSON(t.Context(), c, url+"/v1/chat/completions", "", chatBody(model, 8, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("chat request: %v %v", err, resp)
		}
	}
}

// TestConnectAPIProtocols calls Summary and RecentRecords with the generated client through
// real Caddy: on the admin listener over HTTP/1.1 with the Connect protocol (binary and JSON)
// and gRPC-Web, and on the llmtap_api site route over HTTP/2 (h2c) with gRPC, gRPC-Web and
// Connect. Every combination must see the same requests.
func TestConnectAPIProtocols(t *testing.T) {
	up := startUpstream(t, mock.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	p, _ := loadProxy(t, apiGlobals, apiSite(up, ""))
	const model, n = "proto-model", 5
	sendChats(t, newClient(t), p.sites[0], model, n)
	waitIdle(t)

	h1, seen1 := h1Client(t)
	h2, seen2 := h2cClient(t)
	cases := []struct {
		name   string
		client *http.Client
		base   string
		opts   []connect.ClientOption
	}{
		{"admin/http1/connect+proto", h1, p.admin, nil},
		{"admin/http1/connect+json", h1, p.admin, []connect.ClientOption{connect.WithProtoJSON()}},
		{"admin/http1/grpc-web", h1, p.admin, []connect.ClientOption{connect.WithGRPCWeb()}},
		{"site/h2c/grpc", h2, p.sites[0], []connect.ClientOption{connect.WithGRPC()}},
		{"site/h2c/grpc-web", h2, p.sites[0], []connect.ClientOption{connect.WithGRPCWeb()}},
		{"site/h2c/connect+json", h2, p.sites[0], []connect.ClientOption{connect.WithProtoJSON()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := llmtapv1connect.NewTapServiceClient(tc.client, tc.base, tc.opts...)
			res, err := c.Summary(t.Context(), connect.NewRequest(&llmtapv1.SummaryRequest{Window: "cumulative"}))
			if err != nil {
				t.Fatalf("Summary: %v", err)
			}
			var g *llmtapv1.Group
			for _, x := range res.Msg.Groups {
				if x.Model == model && x.Class == "live" && x.StatusClass == "2xx" {
					g = x
				}
				if x.Window != "cumulative" {
					t.Errorf("group of window %q in a cumulative-only summary", x.Window)
				}
			}
			if g == nil {
				t.Fatalf("no live 2xx group for %s in %v", model, res.Msg.Groups)
			}
			if got := g.Scalars["request_count"].GetValue(); got != n {
				t.Errorf("request_count %v, want %d", got, n)
			}
			ttft := g.Metrics["time_to_first_token"]
			if ttft.GetCount() != n || ttft.GetP50() < 5 || ttft.GetUnit() != "ms" {
				t.Errorf("TTFT %v: want %d values in ms, p50 at least the mock's 5 ms", ttft, n)
			}
			recs, err := c.RecentRecords(t.Context(), connect.NewRequest(&llmtapv1.RecentRecordsRequest{Limit: 3, Model: model}))
			if err != nil {
				t.Fatalf("RecentRecords: %v", err)
			}
			if len(recs.Msg.Records) != 3 {
				t.Fatalf("%d records, want 3", len(recs.Msg.Records))
			}
			for _, r := range recs.Msg.Records {
				if r.Model != model || r.Status != 200 || r.OutputTokens != 8 || r.TtftMs == nil || r.ItlMs == nil || r.Start == nil {
					t.Errorf("record %+v: want model %s, status 200, 8 output tokens, TTFT, ITL and start", r, model)
				}
			}
		})
	}
	seen1.only(t, 1)
	seen2.only(t, 2)

	// Bad input gets a clear error with the right code.
	c := llmtapv1connect.NewTapServiceClient(h1, p.admin)
	_, err := c.RecentRecords(t.Context(), connect.NewRequest(&llmtapv1.RecentRecordsRequest{Limit: -1}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "limit -1") {
		t.Errorf("RecentRecords limit -1: %v, want InvalidArgument naming the limit", err)
	}
	_, err = c.Summary(t.Context(), connect.NewRequest(&llmtapv1.SummaryRequest{Window: "hourly"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("Summary window hourly: %v, want InvalidArgument", err)
	}
	// The API's own calls on the site are not measured as inference traffic.
	res, err := c.Summary(t.Context(), connect.NewRequest(&llmtapv1.SummaryRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Msg.Groups {
		if g.Model != model {
			t.Errorf("a group for model %q: the API's requests were measured", g.Model)
		}
	}
}

// TestConnectTimelineStream reads the timeline stream while live traffic flows through Caddy
// to the mock: over the admin listener with the Connect protocol on HTTP/1.1, for longer
// than the admin server's 10 s read timeout, and on the site route with gRPC and gRPC-Web
// over HTTP/2.
// Windows must keep coming, numbered in order (a window sent before it was final comes once
// more when final), come from the app's timeline, and show the traffic.
func TestConnectTimelineStream(t *testing.T) {
	up := startUpstream(t, mock.Config{TTFT: 10 * time.Millisecond, ITL: time.Millisecond})
	p, _ := loadProxy(t, apiGlobals+"\n\tllmtap {\n\t\tgpu off\n\t}", apiSite(up, ""))
	const model = "stream-model"

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sent atomic.Int64
	var load sync.WaitGroup
	load.Go(func() {
		c := newClient(t)
		for ctx.Err() == nil {
			resp, _, err := testkit.PostJSON(ctx, c, p.sites[0]+"/v1/chat/completions", "", chatBody(model, 16, true, true))
			if err == nil && resp.StatusCode == http.StatusOK {
				sent.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	defer load.Wait()

	h1, seen1 := h1Client(t)
	h2, seen2 := h2cClient(t)
	type result struct {
		name    string
		windows []*llmtapv1.TimelineWindow
		err     error
	}
	read := func(name string, c llmtapv1connect.TapServiceClient, n int) result {
		res := result{name: name}
		st, err := c.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{Model: model}))
		if err != nil {
			res.err = err
			return res
		}
		defer st.Close()
		for len(res.windows) < n && st.Receive() {
			res.windows = append(res.windows, st.Msg().Window)
		}
		if len(res.windows) < n {
			res.err = errors.Join(errors.New("the stream ended early"), st.Err())
		}
		return res
	}
	var wg sync.WaitGroup
	results := make([]result, 3)
	// 12 windows of 1 s outlast the admin server's 10 s read timeout.
	wg.Go(func() { results[0] = read("admin/http1/connect", llmtapv1connect.NewTapServiceClient(h1, p.admin), 12) })
	wg.Go(func() {
		results[1] = read("site/h2c/grpc", llmtapv1connect.NewTapServiceClient(h2, p.sites[0], connect.WithGRPC()), 4)
	})
	wg.Go(func() {
		results[2] = read("site/h2c/grpc-web", llmtapv1connect.NewTapServiceClient(h2, p.sites[0], connect.WithGRPCWeb()), 4)
	})
	wg.Wait()
	cancel()

	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: after %d windows: %v", r.name, len(r.windows), r.err)
			continue
		}
		var withTraffic int
		var newest int64
		provisional := map[int64]bool{} // windows sent before they were final, not yet again
		for i, w := range r.windows {
			switch {
			case w.Seq > newest:
				newest = w.Seq
				provisional[w.Seq] = !w.Final
			case w.Final && provisional[w.Seq]:
				provisional[w.Seq] = false // sent again once final, once
			default:
				t.Errorf("%s: window %d has seq %d (final %v) after %d: want new windows in order, and an earlier one only once again when final", r.name, i, w.Seq, w.Final, newest)
			}
			if w.Source != "timeline" || w.Duration.AsDuration() != time.Second || w.Start == nil {
				t.Errorf("%s: window %d: want a 1 s window of the app's timeline with its start: %v", r.name, i, w)
			}
			for _, se := range w.Series {
				if se.Model != model {
					t.Errorf("%s: series of model %q in a stream for %q", r.name, se.Model, model)
				}
				if se.Class == "live" && se.Requests > 0 && se.RequestRate > 0 && se.OutputTokenRate > 0 &&
					se.TtftMs.GetP50() >= 10 && se.TtftMs.GetP99() >= se.TtftMs.GetP50() && se.ItlMs.GetP50() > 0 &&
					se.InFlight != nil {
					withTraffic++
				}
			}
		}
		if withTraffic == 0 {
			t.Errorf("%s: no window shows the live traffic (rate, tokens/s, TTFT ≥ the mock's 10 ms, ITL): %v", r.name, r.windows)
		}
	}
	if sent.Load() == 0 {
		t.Error("no request went through during the stream")
	}
	seen1.only(t, 1)
	seen2.only(t, 2)
}

// TestConnectControl covers the recording RPCs through real Caddy: a recording started and
// stopped at runtime writes the requests of its span, bad requests get clear errors, the
// read-only site route refuses control.
func TestConnectControl(t *testing.T) {
	up := startUpstream(t, mock.Config{})
	// The app's timeline, with 250 ms windows final 50 ms after their end, writes them into
	// the runtime recording's folder too.
	p, _ := loadProxy(t, apiGlobals+"\n\tllmtap {\n\t\tgpu off\n\t\ttimeline {\n\t\t\twindow 250ms\n\t\t\tsettle 50ms\n\t\t}\n\t}", apiSite(up, ""))
	h1, _ := h1Client(t)
	admin := llmtapv1connect.NewTapServiceClient(h1, p.admin)
	site := llmtapv1connect.NewTapServiceClient(h1, p.sites[0])
	ctx := t.Context()
	chat := newClient(t)

	sendChats(t, chat, p.sites[0], "before", 2) // before the recording: not written
	waitIdle(t)

	dir := filepath.Join(t.TempDir(), "rec")
	if _, err := site.RecordingStart(ctx, connect.NewRequest(&llmtapv1.RecordingStartRequest{Dir: dir})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("RecordingStart on the read-only site: %v, want PermissionDenied", err)
	}
	if _, err := admin.RecordingStart(ctx, connect.NewRequest(&llmtapv1.RecordingStartRequest{})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("RecordingStart without a folder: %v, want InvalidArgument", err)
	}
	if _, err := admin.RecordingStart(ctx, connect.NewRequest(&llmtapv1.RecordingStartRequest{Dir: dir, Files: []string{"videos"}})); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "videos") {
		t.Errorf("RecordingStart with files [videos]: %v, want InvalidArgument naming it", err)
	}
	if _, err := admin.RecordingStop(ctx, connect.NewRequest(&llmtapv1.RecordingStopRequest{})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("RecordingStop with none running: %v, want FailedPrecondition", err)
	}
	start, err := admin.RecordingStart(ctx, connect.NewRequest(&llmtapv1.RecordingStartRequest{Dir: dir, Files: []string{"records"}}))
	if err != nil {
		t.Fatalf("RecordingStart: %v", err)
	}
	if start.Msg.Recording.GetOrigin() != "runtime" || start.Msg.Recording.GetDir() != dir {
		t.Errorf("started %v, want the runtime recording in %s", start.Msg.Recording, dir)
	}
	if _, err := admin.RecordingStart(ctx, connect.NewRequest(&llmtapv1.RecordingStartRequest{Dir: dir})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("a second RecordingStart: %v, want FailedPrecondition", err)
	}
	sendChats(t, chat, p.sites[0], "during", 3)
	waitIdle(t)
	time.Sleep(time.Second) // timeline windows end and become final meanwhile
	status, err := site.RecordingStatus(ctx, connect.NewRequest(&llmtapv1.RecordingStatusRequest{}))
	if err != nil || len(status.Msg.Recordings) != 1 || status.Msg.Recordings[0].Dir != dir {
		t.Errorf("RecordingStatus (read-only site): %v %v, want the runtime recording", status, err)
	}
	stop, err := admin.RecordingStop(ctx, connect.NewRequest(&llmtapv1.RecordingStopRequest{}))
	if err != nil {
		t.Fatalf("RecordingStop: %v", err)
	}
	sendChats(t, chat, p.sites[0], "after", 1) // after: not written
	waitIdle(t)
	if st := stop.Msg.Stopped; st.GetWritten() != 3 || st.GetDropped() != 0 || len(st.GetFiles()) != 1 {
		t.Errorf("stopped recording %v: want 3 written, none dropped, one records file", st)
	}
	if tl, _ := filepath.Glob(filepath.Join(dir, "timeline-*.jsonl")); len(tl) != 1 {
		t.Errorf("timeline files %v in the runtime recording's folder, want one", tl)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "records-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 3 || strings.Count(string(b), `"model":"during"`) != 3 {
		t.Errorf("the record file has %d lines, want the 3 requests of model during:\n%s", lines, b)
	}

	st, err := admin.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{Interval: durationpb.New(-time.Second)}))
	if err == nil {
		for st.Receive() {
			t.Error("StreamTimeline with a negative interval sent a window")
			break
		}
		err = st.Err()
		st.Close()
	}
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "interval") {
		t.Errorf("StreamTimeline with a negative interval: %v, want InvalidArgument naming the interval", err)
	}
}

// TestConnectStreamEndsOnReload: a config reload ends the timeline streams of the replaced
// config cleanly (so the old admin server can stop and the client reconnects), and a new
// stream on the same address works at once.
func TestConnectStreamEndsOnReload(t *testing.T) {
	up := startUpstream(t, mock.Config{})
	p, cf := loadProxy(t, apiGlobals, apiSite(up, ""))
	h1, _ := h1Client(t)
	for _, base := range []string{p.admin, p.sites[0]} {
		c := llmtapv1connect.NewTapServiceClient(h1, base)
		// Bounded, so a stream the reload does not end fails the test instead of hanging it.
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		st, err := c.StreamTimeline(ctx, connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if !st.Receive() {
			t.Fatalf("%s: no first window: %v", base, st.Err())
		}
		cfgJSON := testkit.Adapt(t, t.Name(), cf)
		reloaded := time.Now()
		testkit.Load(t, cfgJSON)
		for st.Receive() {
		}
		if err := st.Err(); err != nil {
			t.Errorf("%s: the stream ended with %v, want a clean end", base, err)
		}
		if d := time.Since(reloaded); d > 5*time.Second {
			t.Errorf("%s: the stream ended %v after the reload", base, d)
		}
		st.Close()
		// The replaced server closes the connection the stream used once it is idle, and a
		// connection accepted while Caddy swaps the admin servers can be reset: a client
		// reconnecting retries briefly, as llmtap top does.
		var ok bool
		for try := 0; try < 40 && !ok; try++ {
			h1.CloseIdleConnections()
			st, err = c.StreamTimeline(t.Context(), connect.NewRequest(&llmtapv1.StreamTimelineRequest{}))
			if ok = err == nil && st.Receive(); !ok {
				if err == nil {
					err = st.Err()
					st.Close()
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		if !ok {
			t.Fatalf("%s: no stream within 2 s of the reload: %v", base, err)
		}
		st.Close()
	}
}
