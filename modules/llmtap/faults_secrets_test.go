package llmtap_test

// Fault-matrix cases of hostile requests aimed at llmtap's outputs rather than at the stream:
// credentials hidden from the redaction rules by duplicate or re-spelled keys, credentials in
// the query string of mirrored requests, and bodies that are not UTF-8. Each request goes
// through a site with llmtap and through the same reverse_proxy without it; the client must not
// tell them apart, and nothing llmtap writes or sends on may carry the secrets.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/labelcap"
)

// seenByMirror is a mirror upstream on loopback: it keeps the request URI and headers of every
// copy by X-Request-Id and answers with a small chat completion.
type seenByMirror struct {
	addr string
	mu   sync.Mutex
	uri  map[string]string
	hdr  map[string]http.Header
}

func startMirrorUpstream(t *testing.T) *seenByMirror {
	t.Helper()
	s := &seenByMirror{uri: map[string]string{}, hdr: map[string]http.Header{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.uri[r.Header.Get("X-Request-Id")] = r.URL.RequestURI()
		s.hdr[r.Header.Get("X-Request-Id")] = r.Header.Clone()
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"m","object":"chat.completion","model":"mirror-model","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return s
}

// wait returns what the mirror upstream saw of request id, waiting (bounded) for the copy.
func (s *seenByMirror) wait(t *testing.T, id string) (string, http.Header) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		uri, ok := s.uri[id]
		h := s.hdr[id]
		s.mu.Unlock()
		if ok {
			return uri, h
		}
	}
	t.Fatalf("the mirror upstream never saw %s", id)
	return "", nil
}

// TestFaultsSecrets: sites[0] records payloads with redact_fields api_key and redact_text and
// mirrors every request; sites[1] is the plain reverse_proxy; sites[2] records payloads
// without redaction.
func TestFaultsSecrets(t *testing.T) {
	up, mir := startFaultUpstream(t), startMirrorUpstream(t)
	base := t.TempDir()
	redacted, raw := filepath.Join(base, "redacted"), filepath.Join(base, "raw")
	p, _ := loadProxy(t, "",
		site{body: fmt.Sprintf("\tllmtap {\n\t\trecord %s {\n\t\t\tpayloads\n\t\t\tredact_fields api_key\n\t\t\tredact_text\n\t\t}\n\t\tmirror http://%s {\n\t\t\tsample 100%%\n\t\t}\n\t}\n\treverse_proxy %s", redacted, mir.addr, up.addr)},
		site{body: "\treverse_proxy " + up.addr},
		site{body: fmt.Sprintf("\tllmtap {\n\t\trecord %s {\n\t\t\tpayloads\n\t\t}\n\t}\n\treverse_proxy %s", raw, up.addr)},
	)
	c := newClient(t)
	send := func(siteURL, id, query string, body []byte, header map[string]string) outcome {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return exchange(ctx, c, siteURL+"/v1/chat/completions"+query, id, faultEcho, bytes.NewReader(body), int64(len(body)), "application/json", header)
	}
	same := func(tap, plain outcome) {
		t.Helper()
		if tap.err != nil || tap.status != http.StatusOK {
			t.Fatalf("through llmtap: %d %v", tap.status, tap.err)
		}
		if d := tap.sameAs(plain); d != "" {
			t.Errorf("the client could tell llmtap was there: %s", d)
		}
	}

	// Duplicate and re-spelled keys, credentials in the query and in a provider's header.
	hidden := `{"model":"m","api_key":"leakcheck-K1","messages":[{"role":"user","content":"leakcheck-T1"}],` +
		`"API_KEY":"leakcheck-K2","messages":[{"role":"user","content":"leakcheck-T2","content":"leakcheck-T3"}],` +
		`"Api_Key":"leakcheck-K3","api\u005fkey":"leakcheck-K4","Prompt":"leakcheck-T4","max_tokens":4}`
	query := "?api-version=2024-06-01&api_key=leakcheck-Q1&key=leakcheck-Q2&subscription-key=leakcheck-Q3&X-Amz-Signature=leakcheck-Q4&sig=leakcheck-Q5"
	header := map[string]string{"Ocp-Apim-Subscription-Key": "leakcheck-H1"}
	same(send(p.sites[0], "dup-tap", query, []byte(hidden), header), send(p.sites[1], "dup-plain", query, []byte(hidden), header))

	// A body that is not UTF-8, in a field no rule rewrites, and in the prompt.
	notUTF8 := []byte("{\"model\":\"m\",\"user\":\"caf\xe9\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe hi\"}]}")
	same(send(p.sites[0], "utf8-tap", "", notUTF8, nil), send(p.sites[1], "utf8-plain", "", notUTF8, nil))
	same(send(p.sites[2], "utf8-raw", "", notUTF8, nil), send(p.sites[1], "utf8-plain2", "", notUTF8, nil))

	uri, h := mir.wait(t, "dup-tap")
	if want := "/v1/chat/completions?api-version=2024-06-01"; uri != want {
		t.Errorf("the mirror upstream saw %s, want %s", uri, want)
	}
	if v := h.Get("Ocp-Apim-Subscription-Key"); v != "" {
		t.Errorf("the mirror upstream got Ocp-Apim-Subscription-Key %q", v)
	}
	recs := p.records(t)
	if r := recs["dup-tap"]; r.Path != "/v1/chat/completions" {
		t.Errorf("record path %q, want the path without its query", r.Path)
	}
	mir.wait(t, "utf8-tap")
	if err := caddy.Stop(); err != nil { // flushes and closes the recordings
		t.Fatal(err)
	}

	files := map[string][]byte{}
	readFilesInto(t, files, redacted, raw)
	payloads := 0
	for name, b := range files {
		if bytes.Contains(b, []byte("leakcheck")) {
			t.Errorf("%s holds a secret: %s", name, b)
		}
		if !strings.Contains(name, "payloads-") {
			continue
		}
		for line := range bytes.Lines(b) {
			payloads++
			if !utf8.Valid(line) || !json.Valid(line) { // JSON text is UTF-8 (RFC 8259 §8.1); json.Valid does not check it
				t.Errorf("%s: a line is not valid JSON: %q", name, line)
			}
		}
	}
	if payloads != 3 {
		t.Fatalf("%d payload lines, want 3 (2 redacted, 1 raw): the checks above saw nothing", payloads)
	}
	// The raw recording hands the exact bytes back to a replay.
	got, _, err := trace.ReadFile(rawPayloadFile(t, raw), trace.Options{})
	if err != nil || len(got) != 1 || !bytes.Equal(got[0].Payload, notUTF8) {
		t.Errorf("the raw recording reads back %d payloads (%v), want the body sent byte for byte", len(got), err)
	}
}

// readFilesInto reads every file of dirs into out, named "<folder base>/<file>".
func readFilesInto(t *testing.T, out map[string][]byte, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Join(filepath.Base(d), e.Name())] = b
		}
	}
}

// rawPayloadFile returns the one payload file in dir.
func rawPayloadFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "payloads-*.jsonl"))
	if len(m) != 1 {
		t.Fatalf("%d payload files in %s", len(m), dir)
	}
	return m[0]
}

// TestFaultsLongModelNames sends more distinct model names than any consumer gives series to,
// most of them 20 KB long and alike but for their last characters: every label in /metrics
// and every model in the summary and the records must be at most labelcap.MaxLen bytes, two
// different names must never share a label unless folded into _other, /metrics and the summary
// must give their own series to the same models (one cap, one rule), and /metrics must stay
// small.
func TestFaultsLongModelNames(t *testing.T) {
	up := startUpstream(t, mock.Config{TTFT: time.Millisecond, ITL: time.Millisecond, OutputTokens: 2, Seed: 5})
	p, _ := loadProxy(t, "", site{body: "\tllmtap\n\treverse_proxy " + up.addr + " {\n\t\tflush_interval -1\n\t}"})
	c := newClient(t)
	const n = 2*labelcap.DefaultMax + 8
	long := strings.Repeat("m", 20<<10)
	sent := map[string]string{} // label a name must have if it keeps a series -> name
	t.Cleanup(func() {
		// The collectors are process-wide: drop this test's 1.4 MB of series, which would
		// otherwise slow every later scrape of /metrics in this process (a Prometheus server
		// scraping with a 500 ms timeout under -race timed out on them).
		for label := range sent {
			llmtap.DeleteModelSeries(label)
		}
		llmtap.DeleteModelSeries(labelcap.Other)
	})
	for i := range n {
		model := fmt.Sprintf("short-%d", i)
		if i%4 != 0 {
			model = long + strconv.Itoa(i)
		}
		sent[labelcap.Shorten(model)] = model
		resp, _, err := testkit.PostJSON(t.Context(), c, p.sites[0]+"/v1/chat/completions", fmt.Sprintf("long-model-%d", i), chatBody(model, 2, true, false))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
	}
	if len(sent) != n {
		t.Fatalf("%d distinct labels for %d distinct names: two long names merged", len(sent), n)
	}
	metrics := p.adminGet(t, "/metrics")
	promModels := map[string]bool{}
	for _, s := range p.metricSamples(t, "llmtap_requests_total") {
		m := s.labels["model"]
		if len(m) > labelcap.MaxLen {
			t.Fatalf("/metrics has a model label of %d bytes", len(m))
		}
		promModels[m] = true
	}
	own := 0 // the collectors are process-wide: earlier tests' models are there too
	for m := range sent {
		if promModels[m] {
			own++
		}
	}
	if own > labelcap.DefaultMax {
		t.Errorf("/metrics gives %d of the models their own series, want at most %d", own, labelcap.DefaultMax)
	}
	if !promModels[labelcap.Other] {
		t.Errorf("no model was folded into %s after %d distinct models", labelcap.Other, n)
	}
	t.Logf("/metrics: %d bytes after %d model names of up to 20 KB", len(metrics), n)
	if len(metrics) > 4<<20 {
		t.Errorf("/metrics is %d bytes", len(metrics))
	}
	groups, _, _ := p.summary(t)
	sumModels := map[string]bool{}
	for _, g := range groups {
		if len(g.Model) > labelcap.MaxLen {
			t.Fatalf("the summary has a model of %d bytes", len(g.Model))
		}
		sumModels[g.Model] = true
	}
	for m := range sent {
		if promModels[m] != sumModels[m] {
			t.Errorf("model %.40q…: own series in /metrics %v, in the summary %v: the caps disagree", m, promModels[m], sumModels[m])
		}
	}
	for id, r := range p.records(t) {
		if strings.HasPrefix(id, "long-model-") && len(r.Model) > labelcap.MaxLen {
			t.Errorf("record %s keeps a model of %d bytes", id, len(r.Model))
		}
	}
}

// markerLogFilter keeps the shadow marker out of Caddy's access log (SECURITY.md, examples).
const markerLogFilter = `format filter {
			wrap json
			fields {
				request>headers>Llmtap-Shadow delete
			}
		}`

// TestFaultsMarkerReplay runs a shadow load through a site whose access log goes to two files,
// one with markerLogFilter and one without, then replays a mark copied from the unfiltered log
// the way someone who can read that log would: the request must be measured as live and
// counted as replayed (not as forged), and the filtered log must hold no mark at all.
func TestFaultsMarkerReplay(t *testing.T) {
	_, up := serveShadowMock(t)
	logs := t.TempDir()
	admin, addr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	globals := fmt.Sprintf(`	log filtered {
		include http.log.access
		output file %[1]s/filtered.log
		%[2]s
	}
	log unfiltered {
		include http.log.access
		output file %[1]s/unfiltered.log
	}
	llmtap {
		shadow replay-check {
			url http://%[3]s/v1/chat/completions
			model shadow-m
			rate 20
			isl 16
			osl 4
		}
	}`, logs, markerLogFilter, addr)
	cf := caddyfileFor(admin, globals, []string{addr}, []site{{body: "\tlog\n\tllmtap\n\treverse_proxy " + up}})
	llmtap.ResetModelLabels()
	testkit.StartCaddyfile(t, t.Name(), cf)
	p := &shadowProxy{proxy: &proxy{admin: "http://" + admin, sites: []string{"http://" + addr}}, site: addr}
	waitUntil(t, 20*time.Second, "5 shadow requests", func() bool { return p.shadowStatus(t).one(t).OK >= 5 })

	var mark string
	waitUntil(t, 10*time.Second, "a mark in the unfiltered access log", func() bool {
		b, _ := os.ReadFile(filepath.Join(logs, "unfiltered.log"))
		for line := range bytes.Lines(b) {
			var e struct {
				Request struct {
					Headers map[string][]string `json:"headers"`
				} `json:"request"`
			}
			if json.Unmarshal(line, &e) == nil && len(e.Request.Headers["Llmtap-Shadow"]) == 1 {
				mark = e.Request.Headers["Llmtap-Shadow"][0]
				return true
			}
		}
		return false
	})
	st0 := p.shadowStatus(t)
	c := newClient(t)
	req, _ := http.NewRequest(http.MethodPost, p.sites[0]+"/v1/chat/completions", bytes.NewReader(chatBody("replayed-m", 4, true, false)))
	req.Header.Set("Llmtap-Shadow", mark)
	req.Header.Set("X-Request-Id", "replayed-mark")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	st := p.shadowStatus(t)
	if r, ok := p.records(t)["replayed-mark"]; !ok || r.Class != "live" {
		t.Errorf("the request with a replayed mark was measured as %q, want live", r.Class)
	}
	if got := st.ReplayedMarkers - st0.ReplayedMarkers; got != 1 {
		t.Errorf("replayed markers counted %d, want 1", got)
	}
	if got := st.ForgedMarkers - st0.ForgedMarkers; got != 0 {
		t.Errorf("a replayed genuine mark was counted as forged (%d)", got)
	}
	if code, body := p.adminPost(t, "/llmtap/shadow/replay-check/stop", ""); code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	filtered, _ := os.ReadFile(filepath.Join(logs, "filtered.log"))
	if !bytes.Contains(filtered, []byte(`"uri":"/v1/chat/completions"`)) {
		t.Fatal("the filtered access log holds no request: the check below would see nothing")
	}
	if bytes.Contains(filtered, []byte("Llmtap-Shadow")) {
		t.Error("the filtered access log holds the marker header")
	}
}
