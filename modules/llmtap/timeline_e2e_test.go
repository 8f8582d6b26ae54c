package llmtap_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// fakeGPU is a one-GPU source that counts what the gpu feature does with it.
type fakeGPU struct {
	polls  atomic.Int64
	closed atomic.Bool
}

func (f *fakeGPU) Sample(dst []gpu.Sample) ([]gpu.Sample, error) {
	if f.closed.Load() {
		return dst, fmt.Errorf("%w: sampled after Close", gpu.ErrNoNVML)
	}
	n := f.polls.Add(1)
	return append(dst, gpu.Sample{Time: time.Now(), UUID: "GPU-fake", PowerMW: 100_000, EnergyMJ: uint64(n) * 1000,
		GPUUtil: 50, Valid: gpu.FieldPower | gpu.FieldEnergy | gpu.FieldUtil}), nil
}

func (f *fakeGPU) Close() error { f.closed.Store(true); return nil }

// fakeGPUs hands out fakeGPU sources and keeps them, so a test can count opens and closes.
type fakeGPUs struct {
	mu   sync.Mutex
	srcs []*fakeGPU
}

func (fs *fakeGPUs) open() (gpu.Source, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := &fakeGPU{}
	fs.srcs = append(fs.srcs, f)
	return f, nil
}

// state returns the sources opened so far and how many are still open.
func (fs *fakeGPUs) state() (all []*fakeGPU, open int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.srcs {
		if !f.closed.Load() {
			open++
		}
	}
	return append([]*fakeGPU(nil), fs.srcs...), open
}

// reload adapts a Caddyfile for the same admin and site addresses as p and loads it.
func reload(t *testing.T, p *proxy, globals string, sites ...site) {
	t.Helper()
	addrs := make([]string, len(p.sites))
	for i, s := range p.sites {
		addrs[i] = s[len("http://"):]
	}
	cf := caddyfileFor(p.admin[len("http://"):], globals, addrs, sites)
	testkit.Load(t, testkit.Adapt(t, t.Name(), cf))
}

// TestGPUSamplerSurvivesReload loads a config, reloads it with the GPU settings unchanged and
// then changed: the unchanged reload keeps the one sampler (no second source opened, none
// closed, the timeline kept), the changed one starts one new sampler and stops the old one,
// and unloading stops everything (TestMain's goleak check sees no goroutine left).
func TestGPUSamplerSurvivesReload(t *testing.T) {
	var fs fakeGPUs
	defer llmtap.SetGPUOpener(fs.open)()
	up := startUpstream(t, mock.DefaultConfig())
	globals := func(interval, keep string) string {
		return fmt.Sprintf("llmtap {\n\t\tgpu {\n\t\t\tinterval %s\n\t\t}\n\t\ttimeline {\n\t\t\tkeep %s\n\t\t}\n\t}", interval, keep)
	}
	s := site{body: "llmtap\nreverse_proxy " + up.addr}
	p, _ := loadProxy(t, globals("20ms", "1m"), s)

	waitPolls := func(f *fakeGPU) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); f.polls.Load() < 3; {
			if time.Now().After(deadline) {
				t.Fatalf("the sampler made %d polls in 5 s", f.polls.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	srcs, open := fs.state()
	if len(srcs) != 1 || open != 1 {
		t.Fatalf("after the first load: %d sources opened, %d open; want 1 and 1", len(srcs), open)
	}
	waitPolls(srcs[0])
	tl := llmtap.ActiveTimeline()

	// Same GPU and timeline settings, another site body: everything is adopted.
	reload(t, p, globals("20ms", "1m"), site{body: "llmtap\nreverse_proxy " + up.addr + " {\n\tflush_interval -1\n}"})
	if srcs, open = fs.state(); len(srcs) != 1 || open != 1 {
		t.Fatalf("after an unchanged reload: %d sources opened, %d open; want the same single one", len(srcs), open)
	}
	if llmtap.ActiveTimeline() != tl {
		t.Error("an unchanged reload replaced the timeline (its history is lost)")
	}
	before := srcs[0].polls.Load()
	waitPolls(srcs[0]) // still polling
	if srcs[0].polls.Load() <= before-1 {
		t.Error("the adopted sampler stopped polling")
	}
	if got := llmtap.LatestGPUSamples(nil); len(got) != 1 || got[0].UUID != "GPU-fake" {
		t.Errorf("LatestGPUSamples = %+v, want the fake GPU's latest sample", got)
	}

	// A changed interval: a new sampler, the old one stopped once the old config is gone.
	reload(t, p, globals("30ms", "2m"), s)
	srcs, open = fs.state()
	if len(srcs) != 2 || open != 1 || !srcs[0].closed.Load() {
		t.Fatalf("after changing the interval: %d sources opened, %d open, first closed %v; want 2, 1, true", len(srcs), open, srcs[0].closed.Load())
	}
	if llmtap.ActiveTimeline() == tl {
		t.Error("a changed keep did not start a new timeline")
	}
	stopped := srcs[0].polls.Load()
	waitPolls(srcs[1])
	if n := srcs[0].polls.Load(); n != stopped {
		t.Errorf("the replaced sampler polled %d more times after it was stopped: two samplers ran", n-stopped)
	}

	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, open = fs.state(); open != 0 {
		t.Errorf("%d GPU sources still open after unloading", open)
	}
	if llmtap.ActiveTimeline() != nil || len(llmtap.LatestGPUSamples(nil)) != 0 {
		t.Error("the timeline or the latest GPU samples outlived the config")
	}
}

// TestTimelineRouteAndFile serves traffic through Caddy with recording on and a short
// timeline, then checks GET /llmtap/timeline's JSON shape and filters and the
// timeline-*.jsonl file written beside the records (mode 0600). The host has no GPU here
// (the opener says NVML is absent), so windows and records carry no GPU data.
func TestTimelineRouteAndFile(t *testing.T) {
	defer llmtap.SetGPUOpener(func() (gpu.Source, error) { return nil, fmt.Errorf("%w: test", gpu.ErrNoNVML) })()
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.OutputTokens = 5*time.Millisecond, time.Millisecond, 8
	up := startUpstream(t, cfg)
	dir := filepath.Join(t.TempDir(), "rec")
	p, _ := loadProxy(t, "llmtap {\n\t\ttimeline {\n\t\t\twindow 250ms\n\t\t\tsettle 250ms\n\t\t}\n\t}",
		site{body: "llmtap {\n\trecord " + dir + "\n}\nreverse_proxy " + up.addr})
	client := newClient(t)
	begin := time.Now()
	for i := range 6 {
		resp, _, err := testkit.PostJSON(context.Background(), client, p.sites[0]+"/v1/chat/completions", "tl-"+strconv.Itoa(i), chatBody("m", 8, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
	}
	waitIdle(t)
	time.Sleep(800 * time.Millisecond) // the last window closes and becomes final

	var doc struct {
		WindowMs float64           `json:"window_ms"`
		Dropped  uint64            `json:"dropped"`
		Windows  []timeline.Window `json:"windows"`
	}
	get := func(query string) {
		t.Helper()
		doc.Windows = nil
		if err := json.Unmarshal(p.adminGet(t, "/llmtap/timeline"+query), &doc); err != nil {
			t.Fatal(err)
		}
	}
	since := strconv.FormatInt(begin.Add(-time.Second).UnixMilli(), 10)
	get("?since=" + since)
	if doc.WindowMs != 250 || len(doc.Windows) == 0 {
		t.Fatalf("window_ms %v, %d windows; want 250 and some", doc.WindowMs, len(doc.Windows))
	}
	var requests int64
	var tokens float64
	for i, w := range doc.Windows {
		if w.DurationMs != 250 || w.StartMs%250 != 0 || (i > 0 && w.Seq != doc.Windows[i-1].Seq+1) {
			t.Errorf("window %+v: want 250 ms windows aligned to 250 ms and consecutive", w)
		}
		if len(w.GPUs) != 0 {
			t.Errorf("window %d has GPUs on a host without NVML", w.Seq)
		}
		for _, s := range w.Series {
			if s.Class != "live" || s.Model != "m" {
				t.Errorf("unexpected series %s/%s", s.Class, s.Model)
			}
			requests += s.Requests
			tokens += s.OutputTokens
			if s.Requests > 0 && s.RequestRate != float64(s.Requests)*4 {
				t.Errorf("request rate %v for %d requests in 250 ms", s.RequestRate, s.Requests)
			}
		}
	}
	if requests != 6 || tokens < 47.999 || tokens > 48.001 {
		t.Errorf("the windows hold %d requests and %.3f output tokens; want 6 and 48", requests, tokens)
	}

	// The raw JSON has the documented names.
	raw := p.adminGet(t, "/llmtap/timeline?since="+since)
	var shape struct {
		Windows []map[string]json.RawMessage `json:"windows"`
	}
	if err := json.Unmarshal(raw, &shape); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"seq", "start", "start_ms", "duration_ms", "final", "series"} {
		if _, ok := shape.Windows[0][k]; !ok {
			t.Errorf("a window lacks %q: %s", k, raw)
		}
	}

	get("?class=shadow&since=" + since)
	for _, w := range doc.Windows {
		if len(w.Series) != 0 {
			t.Errorf("?class=shadow returned series %+v", w.Series)
		}
	}
	get("?since=" + strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10))
	if len(doc.Windows) != 0 {
		t.Errorf("?since an hour ahead returned %d windows", len(doc.Windows))
	}
	resp, err := http.Get(p.admin + "/llmtap/timeline?since=yesterday")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("since=yesterday answered %d, want 400", resp.StatusCode)
	}

	// The records carry no GPU figures without a GPU.
	for id, r := range p.records(t) {
		if r.GPU != nil {
			t.Errorf("record %s has GPU figures %+v without a GPU", id, *r.GPU)
		}
	}

	files, _ := filepath.Glob(filepath.Join(dir, "timeline-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("timeline files in the recording folder: %v; want one", files)
	}
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", files[0], st.Mode().Perm())
	}
	var final int64
	err = readLines(files[0], func(line []byte) error {
		var w timeline.Window
		if err := json.Unmarshal(line, &w); err != nil {
			return err
		}
		if !w.Final {
			return errors.New("a written window is not final")
		}
		for _, s := range w.Series {
			final += s.Requests
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if final != 6 {
		t.Errorf("the timeline file's windows hold %d requests, want 6", final)
	}
}

// readLines calls fn with every line of the file at path.
func readLines(path string, fn func([]byte) error) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			if err := fn(b[:i]); err != nil {
				return err
			}
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return nil
}

// TestScrapesFeedTheTimeline serves a vLLM and a dcgm-exporter page (the scrape package's
// recorded fixtures) on loopback and configures both scrapes on a host without NVML: the
// timeline's windows carry the server's per-model figures and the exporter's GPUs, and
// LatestGPUSamples serves the exporter's GPUs to the exporters.
func TestScrapesFeedTheTimeline(t *testing.T) {
	defer llmtap.SetGPUOpener(func() (gpu.Source, error) { return nil, fmt.Errorf("%w: test", gpu.ErrNoNVML) })()
	pages := map[string]string{}
	for _, name := range []string{"vllm", "dcgm"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "telemetry", "scrape", "testdata", name+".prom"))
		if err != nil {
			t.Fatal(err)
		}
		pages["/"+name] = string(b)
	}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	up := startUpstream(t, mock.DefaultConfig())
	p, _ := loadProxy(t, fmt.Sprintf("llmtap {\n\t\tscrape %s/vllm {\n\t\t\tkind vllm\n\t\t\tinterval 100ms\n\t\t}\n\t\tscrape %s/dcgm {\n\t\t\tkind dcgm\n\t\t\tinterval 100ms\n\t\t}\n\t\ttimeline {\n\t\t\twindow 200ms\n\t\t}\n\t}", base, base),
		site{body: "llmtap\nreverse_proxy " + up.addr})
	time.Sleep(700 * time.Millisecond)

	var doc struct {
		Windows []timeline.Window `json:"windows"`
	}
	if err := json.Unmarshal(p.adminGet(t, "/llmtap/timeline"), &doc); err != nil {
		t.Fatal(err)
	}
	var server *timeline.Server
	var gpus []timeline.GPU
	for _, w := range doc.Windows {
		for i := range w.Servers {
			if w.Servers[i].Model == "meta-llama/Llama-3.1-8B-Instruct" {
				server = &w.Servers[i]
			}
		}
		if len(w.GPUs) > 0 {
			gpus = w.GPUs
		}
	}
	if server == nil || server.Kind != "vllm" || server.Target != base+"/vllm" || server.KVCacheUsage == nil || server.Running == nil || *server.Running != 5 {
		t.Errorf("server entry %+v; want the vLLM page's Llama model with KV-cache usage and 5 running (3 + 2 engines)", server)
	}
	if len(gpus) == 0 || gpus[0].UUID != "GPU-8fd57906-5df7-5b6f-29b0-637cdf8482ff" || gpus[0].PowerW == nil {
		t.Errorf("GPU entries %+v; want the dcgm page's GPUs with power", gpus)
	}
	if got := llmtap.LatestGPUSamples(nil); len(got) == 0 || got[0].Name != "NVIDIA H200" {
		t.Errorf("LatestGPUSamples = %+v; want the dcgm page's H200s", got)
	}
}

// TestTimelineFileRotates gives the recording a rotate_size smaller than one line: the
// timeline file rotates with it, so every final window starts a new file (each 0600).
func TestTimelineFileRotates(t *testing.T) {
	defer llmtap.SetGPUOpener(func() (gpu.Source, error) { return nil, fmt.Errorf("%w: test", gpu.ErrNoNVML) })()
	up := startUpstream(t, mock.DefaultConfig())
	dir := filepath.Join(t.TempDir(), "rec")
	loadProxy(t, "llmtap {\n\t\ttimeline {\n\t\t\twindow 100ms\n\t\t\tsettle 100ms\n\t\t}\n\t}",
		site{body: "llmtap {\n\trecord " + dir + " {\n\t\trotate_size 1\n\t}\n}\nreverse_proxy " + up.addr})
	var files []string
	for deadline := time.Now().Add(5 * time.Second); len(files) < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		files, _ = filepath.Glob(filepath.Join(dir, "timeline-*.jsonl"))
	}
	if len(files) < 3 {
		t.Fatalf("%d timeline files after 5 s of 100 ms windows with rotate_size 1; want a file per window", len(files))
	}
	for _, f := range files[:len(files)-1] { // the newest may be being written
		lines := 0
		if err := readLines(f, func([]byte) error { lines++; return nil }); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if lines != 1 || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d lines, mode %v; want 1 line, 0600", f, lines, st.Mode().Perm())
		}
	}
}
