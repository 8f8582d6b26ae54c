package llmtap_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Secret header values the recording tests send with every request; none may reach a file.
const (
	secretAuth   = "Bearer sk-live-SECRET-4c1f"
	secretAPIKey = "key-SECRET-91ab"
	secretCookie = "session=SECRET-cookie-77"
)

// recordingMock is a fast upstream that reports usage (exact o200k prompt counts), so every
// record has server-reported lengths to compare the files with.
func recordingMock() mock.Config {
	return mock.Config{Model: "rec-model", TTFT: 2 * time.Millisecond, ITL: time.Millisecond, Usage: mock.UsageAlways, Seed: 3}
}

// recordSite is llmtap recording into dir in front of addr.
func recordSite(addr, dir, opts string) site {
	return site{body: fmt.Sprintf("\tllmtap {\n\t\trecord %s {\n%s\n\t\t}\n\t}\n\treverse_proxy %s {\n\t\tflush_interval -1\n\t}", dir, opts, addr)}
}

// recordedPrompt is request i's user message: even requests share a long prefix (more than one
// 512-token block), odd ones are short.
func recordedPrompt(i int) string {
	if i%2 == 0 {
		return strings.Repeat("The keeper of the light writes the log at dusk. ", 120) + "Question " + strconv.Itoa(i)
	}
	return "Short question number " + strconv.Itoa(i)
}

// sendRecorded posts request i with the secret headers and a session header.
func sendRecorded(ctx context.Context, c *http.Client, url string, i int) ([]byte, error) {
	body, _ := json.Marshal(map[string]any{
		"model": "rec-model", "stream": i%3 != 0, "max_tokens": 3 + i%7,
		"messages": []map[string]string{{"role": "user", "content": recordedPrompt(i)}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", fmt.Sprintf("rec-%d", i))
	req.Header.Set("X-Session-Id", fmt.Sprintf("conv-%d", i%4))
	req.Header.Set("Authorization", secretAuth)
	req.Header.Set("X-Api-Key", secretAPIKey)
	req.Header.Set("Cookie", secretCookie)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	return body, nil
}

// recordingFiles reads every file of dir with format/trace's reader, by kind, in file order.
func recordingFiles(t *testing.T, dir string) map[string][]trace.Request {
	t.Helper()
	out := map[string][]trace.Request{}
	for _, kind := range []string{"records", "trace", "payloads"} {
		files, _ := filepath.Glob(filepath.Join(dir, kind+"-*.jsonl"))
		slices.Sort(files)
		for _, f := range files {
			reqs, _, err := trace.ReadFile(f, trace.Options{})
			if err != nil {
				t.Fatalf("reading %s: %v", f, err)
			}
			out[kind] = append(out[kind], reqs...)
		}
	}
	return out
}

// recordLines decodes every records file of dir, in file order.
func recordLines(t *testing.T, dir string) []record.Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "records-*.jsonl"))
	slices.Sort(files)
	var out []record.Record
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			var r record.Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				if !strings.HasSuffix(line, "\n") {
					break // torn by a kill
				}
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// checkNoSecrets fails when a secret header value appears in any file of dir, and checks modes.
func checkNoSecrets(t *testing.T, dir string) {
	t.Helper()
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("recording folder mode %v, want 0700", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
		data, _ := os.ReadFile(p)
		for _, s := range []string{secretAuth, "sk-live-SECRET", secretAPIKey, secretCookie, "SECRET-cookie"} {
			if strings.Contains(string(data), s) {
				t.Errorf("%s contains the secret %q", e.Name(), s)
			}
		}
	}
}

// TestRecordingEndToEnd sends n requests through Caddy with recording on (records, trace,
// payloads) and secret headers, stops Caddy (which flushes and syncs), and checks that each file
// holds exactly the n requests with the lengths llmtap measured, the bodies sent verbatim, the
// session ids, prefix-sharing hash ids, and no secret.
func TestRecordingEndToEnd(t *testing.T) {
	up := startUpstream(t, recordingMock())
	dir := filepath.Join(t.TempDir(), "rec")
	p, _ := loadProxy(t, "", recordSite(up.addr, dir, "\t\t\tpayloads\n\t\t\tsession_header X-Session-Id\n\t\t\tflush_interval 100ms"))
	droppedBefore := llmtap.RecorderDropped() // process-wide: earlier tests may have counted some
	c := newClient(t)
	const n = 24
	sent := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body, err := sendRecorded(t.Context(), c, p.sites[0], i)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			mu.Lock()
			sent[fmt.Sprintf("rec-%d", i)] = string(body)
			mu.Unlock()
		})
	}
	wg.Wait()
	measured := p.records(t)
	var doc struct {
		RecorderDropped *uint64 `json:"recorder_dropped"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/summary"), &doc); err != nil || doc.RecorderDropped == nil || *doc.RecorderDropped != droppedBefore {
		t.Errorf("summary recorder_dropped = %v (err %v), want %d as before the requests", doc.RecorderDropped, err, droppedBefore)
	}
	if m := string(p.adminGet(t, "/metrics")); !strings.Contains(m, `llmtap_recorder_dropped_total{reason="queue_full"} 0`) ||
		!strings.Contains(m, `llmtap_recorder_dropped_total{reason="write_failed"} 0`) {
		t.Error(`/metrics has no llmtap_recorder_dropped_total{reason="queue_full"} 0 and {reason="write_failed"} 0`)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}

	recs := recordLines(t, dir)
	files := recordingFiles(t, dir)
	if len(recs) != n || len(files["records"]) != n || len(files["trace"]) != n || len(files["payloads"]) != n {
		t.Fatalf("files hold %d records, %d trace lines, %d payloads; want %d each", len(recs), len(files["trace"]), len(files["payloads"]), n)
	}
	firstIDs := map[int64]int{}
	for i, r := range recs {
		m, ok := measured[r.RequestID]
		if !ok || sent[r.RequestID] == "" {
			t.Fatalf("record %q was not sent", r.RequestID)
		}
		tr, pl := files["trace"][i], files["payloads"][i]
		if r.InputTokens != m.InputTokens || r.OutputTokens != m.OutputTokens || r.InputTokens == 0 {
			t.Errorf("%s: record has %d/%d tokens, /llmtap/requests %d/%d", r.RequestID, r.InputTokens, r.OutputTokens, m.InputTokens, m.OutputTokens)
		}
		if tr.InputLength != int(r.InputTokens) || tr.OutputLength != int(r.OutputTokens) || len(tr.HashIDs) != trace.Blocks(tr.InputLength, trace.BlockTokens) {
			t.Errorf("%s: trace line %+v does not match the record (%d in, %d out)", r.RequestID, tr, r.InputTokens, r.OutputTokens)
		}
		idx, _ := strconv.Atoi(strings.TrimPrefix(r.RequestID, "rec-"))
		if want := fmt.Sprintf("conv-%d", idx%4); tr.SessionID != want || r.SessionID != want {
			t.Errorf("%s: session %q in the trace, %q in the record; want %q", r.RequestID, tr.SessionID, r.SessionID, want)
		}
		if string(pl.Payload) != sent[r.RequestID] || pl.InputLength != tr.InputLength {
			t.Errorf("%s: payload differs from the body sent:\n got %s\nwant %s", r.RequestID, pl.Payload, sent[r.RequestID])
		}
		if idx%2 == 0 {
			firstIDs[tr.HashIDs[0]]++
		}
	}
	if len(firstIDs) != 1 {
		t.Errorf("prompts sharing a 600-token prefix got %d different first hash ids, want 1: %v", len(firstIDs), firstIDs)
	}
	checkNoSecrets(t, dir)
}

// TestRecordingAcrossReloads checks the reload choice: reloading the same recording keeps
// the recorder and its files; changing it starts new files after writing the old ones out. No
// request is lost either way.
func TestRecordingAcrossReloads(t *testing.T) {
	up := startUpstream(t, recordingMock())
	dir := filepath.Join(t.TempDir(), "rec")
	p, cf := loadProxy(t, "", recordSite(up.addr, dir, "\t\t\tflush_interval 100ms"))
	c := newClient(t)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := sendRecorded(t.Context(), c, p.sites[0], i); err != nil {
				t.Fatal(err)
			}
		}
		waitIdle(t)
	}
	reload := func(caddyfile string) {
		testkit.Load(t, testkit.Adapt(t, t.Name(), caddyfile))
		// The old servers close their idle connections; the next request must not reuse one
		// (a new client: see TestReloadUnderTraffic and reloadedClient).
		c = reloadedClient(t)
	}
	count := func() int {
		f, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		return len(f)
	}
	send(0, 5)
	reload(cf)
	send(5, 10)
	if got := count(); got != 2 {
		t.Errorf("%d files after reloading the same recording, want the same 2", got)
	}
	reload(strings.Replace(cf, "flush_interval 100ms", "flush_interval 200ms", 1))
	send(10, 15)
	if got := count(); got != 4 {
		t.Errorf("%d files after changing the recording, want 4 (2 closed, 2 new)", got)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	recs := recordLines(t, dir)
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.RequestID] = true
	}
	if len(recs) != 15 || len(ids) != 15 {
		t.Errorf("%d record lines, %d distinct requests across reloads; want 15", len(recs), len(ids))
	}
	if tr := recordingFiles(t, dir)["trace"]; len(tr) != 15 {
		t.Errorf("%d trace lines across reloads, want 15", len(tr))
	}
}

// killChildEnv makes the test binary run TestRecordingSurvivesKill's child: Caddy with
// recording and a mock, under load, printing each completed request until it is killed.
const killChildEnv = "LLMTAP_RECORD_KILL_CHILD_DIR"

// killFlush is the child's flush interval; killSlack covers the record pipeline and a busy
// machine between a response's end and its record reaching the recorder.
const (
	killFlush = 200 * time.Millisecond
	killSlack = 800 * time.Millisecond
)

// TestRecordingSurvivesKill runs Caddy with recording in a child process (this test binary
// again), kills it with SIGKILL mid-traffic, and reads the files: the reader accepts them (a
// torn last line is tolerated), every line is a request that was sent, and every request that
// completed more than a flush interval (plus slack for the pipeline) before the kill is there.
func TestRecordingSurvivesKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := filepath.Join(t.TempDir(), "rec")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordingSurvivesKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := map[string]time.Time{}
	sc := bufio.NewScanner(out)
	var first time.Time
	for sc.Scan() {
		id, ok := strings.CutPrefix(sc.Text(), "done ")
		if !ok {
			continue
		}
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		done[id] = now
		if now.Sub(first) > 1500*time.Millisecond && len(done) >= 20 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	go io.Copy(io.Discard, out) //nolint:errcheck // drain until the pipe closes
	_ = cmd.Wait()
	if len(done) < 20 {
		t.Fatalf("the child completed only %d requests before the kill", len(done))
	}

	for _, kind := range []string{"records", "trace"} {
		files, _ := filepath.Glob(filepath.Join(dir, kind+"-*.jsonl"))
		for _, f := range files {
			_, info, err := trace.ReadFile(f, trace.Options{})
			if err != nil {
				t.Errorf("the reader refused %s after a kill: %v", f, err)
			}
			t.Logf("%s: %d lines, torn line %d", filepath.Base(f), info.Lines, info.Torn)
		}
	}
	recs := recordLines(t, dir)
	written := map[string]bool{}
	for _, r := range recs {
		written[r.RequestID] = true
		if !strings.HasPrefix(r.RequestID, "kill-") {
			t.Errorf("a record of a request never sent: %q", r.RequestID)
		}
	}
	lost := 0
	for id, at := range done {
		if !written[id] && killed.Sub(at) > killFlush+killSlack {
			lost++
			t.Errorf("%s completed %v before the kill but is not in the records", id, killed.Sub(at))
		}
	}
	t.Logf("%d requests completed, %d recorded, %d lost beyond the last flush interval", len(done), len(recs), lost)
	if tr := recordingFiles(t, dir)["trace"]; len(tr) > len(recs)+1 || len(tr)+1 < len(recs) {
		t.Errorf("%d trace lines for %d records: the files were flushed apart", len(tr), len(recs))
	}
	checkNoSecrets(t, dir)
}

// killChild is the child: it serves and loads until killed (bounded by 60 s in case the parent
// died), printing "done <id>" when each response is complete.
func killChild(t *testing.T, dir string) {
	up := startUpstream(t, recordingMock())
	p, _ := loadProxy(t, "", recordSite(up.addr, dir, fmt.Sprintf("\t\t\tflush_interval %s", killFlush)))
	c := newClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; ctx.Err() == nil; i += 4 {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.sites[0]+"/v1/chat/completions",
					strings.NewReader(fmt.Sprintf(`{"model":"rec-model","stream":true,"max_tokens":8,"messages":[{"role":"user","content":%q}]}`, recordedPrompt(i))))
				req.Header.Set("X-Request-Id", fmt.Sprintf("kill-%d", i))
				req.Header.Set("Authorization", secretAuth)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				fmt.Printf("done kill-%d\n", i)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
