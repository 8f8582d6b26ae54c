package llmtap_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// heldUpstream streams OpenAI chat completions: the first event at once, the rest only once
// the test opens the gate, so a test can hold streams in flight across a reload. started
// counts the requests it has begun to answer (each one the proxy forwarded, so its handler was
// already measuring it).
type heldUpstream struct {
	addr     string
	gate     chan struct{}
	openOnce sync.Once
	started  atomic.Int64
}

func startHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	u := &heldUpstream{gate: make(chan struct{})}
	srv := httptest.NewServer(u)
	u.addr = srv.Listener.Addr().String()
	t.Cleanup(func() {
		u.open()
		srv.Close()
	})
	return u
}

func (u *heldUpstream) open() { u.openOnce.Do(func() { close(u.gate) }) }

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_, _ = io.WriteString(w, sseEvent("first"))
	_ = rc.Flush()
	u.started.Add(1)
	select {
	case <-u.gate:
	case <-r.Context().Done():
		return
	}
	for _, s := range []string{" second", " third"} {
		_, _ = io.WriteString(w, sseEvent(s))
		_ = rc.Flush()
	}
	_, _ = io.WriteString(w, sseDone)
}

// heldStreams starts n streaming requests with ids prefix0…, returns once the upstream has
// begun to answer every one (they are in flight in the proxy), and returns a function that
// waits for their responses to end and fails the test on any error or short body.
func heldStreams(t *testing.T, c *http.Client, u *heldUpstream, url, prefix string, n int) (wait func()) {
	t.Helper()
	before := u.started.Load()
	errs := make(chan error, n)
	for i := range n {
		go func() {
			id := prefix + strconv.Itoa(i)
			resp, body, err := testkit.PostJSON(context.Background(), c, url+"/v1/chat/completions", id, chatBody("held-model", 8, true, false))
			switch {
			case err != nil:
				errs <- fmt.Errorf("%s: %v", id, err)
			case resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), sseDone):
				errs <- fmt.Errorf("%s: %s, body %q", id, resp.Status, body)
			default:
				errs <- nil
			}
		}()
	}
	for deadline := time.Now().Add(20 * time.Second); u.started.Load() < before+int64(n); {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams reached the upstream in 20 s", u.started.Load()-before, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return func() {
		t.Helper()
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
}

// sendPlain sends n requests one after the other, with ids prefix0…, and checks each ends.
func sendPlain(t *testing.T, c *http.Client, url, prefix string, n int) {
	t.Helper()
	for i := range n {
		resp, body, err := testkit.PostJSON(t.Context(), c, url+"/v1/chat/completions", prefix+strconv.Itoa(i), chatBody("held-model", 8, true, false))
		if err != nil || resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), sseDone) {
			t.Fatalf("request %s%d: %v %v", prefix, i, resp, err)
		}
	}
}

// idsIn returns the request ids of the records files of dir, failing on a duplicate.
func idsIn(t *testing.T, dir string) []string {
	t.Helper()
	var ids []string
	for _, r := range recordLines(t, dir) {
		ids = append(ids, r.RequestID)
	}
	slices.Sort(ids)
	if c := slices.Compact(slices.Clone(ids)); len(c) != len(ids) {
		t.Errorf("%s holds %d records of %d distinct requests", dir, len(ids), len(c))
	}
	return ids
}

// wantIDs is prefix0 … prefix(n-1), sorted as idsIn sorts.
func wantIDs(n int, prefixes ...string) []string {
	var out []string
	for _, p := range prefixes {
		for i := range n {
			out = append(out, p+strconv.Itoa(i))
		}
	}
	slices.Sort(out)
	return out
}

// unloadAndDrain stops Caddy and waits (bounded) until every runner held across configs has
// been let go — the drains of the unloaded configs' handlers included — so that the recorders
// have synced and closed their files.
func unloadAndDrain(t *testing.T) {
	t.Helper()
	if err := caddy.Stop(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); llmtap.SharedRunners() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d runners still held 30 s after unloading", llmtap.SharedRunners())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// heldSite is llmtap recording into dir (when dir is not empty) in front of addr.
func heldSite(addr, dir string) site {
	if dir == "" {
		return site{body: "\treverse_proxy " + addr + " {\n\t\tflush_interval -1\n\t}"}
	}
	return recordSite(addr, dir, "\t\t\tflush_interval 100ms")
}

// TestReloadKeepsInFlightRecords holds 50 streams in flight across a reload and checks that
// every record reaches the recorder of the config that measured it, and nothing is counted
// dropped: when the reload changes the record folder (the old folder gets the 50, the new one
// the requests after), and when a reload removes llmtap altogether (the streams end while no
// loaded config has llmtap) and a later one adds it back with the same folder.
func TestReloadKeepsInFlightRecords(t *testing.T) {
	const held, after = 50, 10
	t.Run("folder changes", func(t *testing.T) {
		up := startHeldUpstream(t)
		dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
		dropped := llmtap.RecorderDropped()
		p, _ := loadProxy(t, "", heldSite(up.addr, dirA))
		wait := heldStreams(t, newClient(t), up, p.sites[0], "fold-held-", held)
		reload(t, p, "", heldSite(up.addr, dirB))
		up.open()
		wait()
		sendPlain(t, reloadedClient(t), p.sites[0], "fold-after-", after)
		unloadAndDrain(t)
		if got, want := idsIn(t, dirA), wantIDs(held, "fold-held-"); !slices.Equal(got, want) {
			t.Errorf("the old folder holds %d records %v, want the %d streams measured by the old config", len(got), got, len(want))
		}
		if got, want := idsIn(t, dirB), wantIDs(after, "fold-after-"); !slices.Equal(got, want) {
			t.Errorf("the new folder holds %d records %v, want the %d requests after the reload", len(got), got, len(want))
		}
		if d := llmtap.RecorderDropped() - dropped; d != 0 {
			t.Errorf("%d records counted dropped, want 0", d)
		}
	})
	t.Run("llmtap removed and added back", func(t *testing.T) {
		up := startHeldUpstream(t)
		dir := filepath.Join(t.TempDir(), "rec")
		dropped := llmtap.RecorderDropped()
		p, _ := loadProxy(t, "", heldSite(up.addr, dir))
		wait := heldStreams(t, newClient(t), up, p.sites[0], "gone-held-", held)
		reload(t, p, "", heldSite(up.addr, "")) // no llmtap anywhere
		up.open()
		wait()
		sendPlain(t, reloadedClient(t), p.sites[0], "gone-plain-", after) // not measured
		reload(t, p, "", heldSite(up.addr, dir))
		sendPlain(t, reloadedClient(t), p.sites[0], "gone-back-", after)
		unloadAndDrain(t)
		got, want := idsIn(t, dir), append(wantIDs(held, "gone-held-"), wantIDs(after, "gone-back-")...)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("the folder holds %d records, want %d: the %d streams in flight when llmtap was removed and the %d after it came back; got %v",
				len(got), len(want), held, after, got)
		}
		if d := llmtap.RecorderDropped() - dropped; d != 0 {
			t.Errorf("%d records counted dropped, want 0", d)
		}
	})
}

// failingGPUs opens fake GPUs whose every poll fails with an error of its own ("fake failure
// N"), which the sampler logs once each; fails counts them.
type failingGPUs struct{ fails atomic.Int64 }

func (f *failingGPUs) open() (gpu.Source, error) { return failingGPU{f}, nil }

type failingGPU struct{ f *failingGPUs }

func (g failingGPU) Sample(dst []gpu.Sample) ([]gpu.Sample, error) {
	return dst, fmt.Errorf("fake failure %d", g.f.fails.Add(1))
}

func (failingGPU) Close() error { return nil }

// TestRunnerLogsFollowReloads logs llmtap to a file, then reloads with the log in another
// file while the GPU sampler (a runner the reload adopts) logs a line per poll: every line
// reaches one of the two files — none is written to the first file's writer after Caddy
// closed it — and the lines after the reload are in the second file.
func TestRunnerLogsFollowReloads(t *testing.T) {
	var fg failingGPUs
	defer llmtap.SetGPUOpener(fg.open)()
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	globals := func(file string) string {
		return fmt.Sprintf("log llmtaplog {\n\t\toutput file %s\n\t\tformat json\n\t\tinclude llmtap\n\t}\n\tllmtap {\n\t\tgpu {\n\t\t\tinterval 10ms\n\t\t}\n\t}", file)
	}
	s := site{body: "respond ok"}
	waitFails := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); fg.fails.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d GPU polls failed in 10 s, want %d", fg.fails.Load(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	p, _ := loadProxy(t, globals(logA), s)
	waitFails(5)
	reload(t, p, globals(logB), s)
	atReload := fg.fails.Load()
	waitFails(atReload + 10)
	if err := caddy.Stop(); err != nil { // stops the sampler before closing the log writer
		t.Fatal(err)
	}
	total := fg.fails.Load()

	seen := map[int64]string{}
	for _, f := range []string{logA, logB} {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var line struct {
				Msg   string `json:"msg"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("%s: %v: %s", f, err, sc.Bytes())
			}
			if n, ok := strings.CutPrefix(line.Error, "fake failure "); ok && line.Msg == "reading a GPU failed" {
				k, _ := strconv.ParseInt(n, 10, 64)
				seen[k] = filepath.Base(f)
			}
		}
		fh.Close()
	}
	var missing []int64
	for k := int64(1); k <= total; k++ {
		if _, ok := seen[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d GPU failures logged; missing %v", total-int64(len(missing)), total, missing)
	}
	// Failures counted after the reload returned came after the new config adopted the
	// sampler: they belong to its log.
	for k := atReload + 1; k <= total; k++ {
		if f, ok := seen[k]; ok && f != "b.log" {
			t.Errorf("failure %d, after the reload, was logged in %s, want b.log (the log of the config that adopted the sampler)", k, f)
			break
		}
	}
}

// TestAppAloneServesGPUMetrics loads a config with the global llmtap app and no llmtap
// handler: the GPU readings are on /metrics all the same.
func TestAppAloneServesGPUMetrics(t *testing.T) {
	var fs fakeGPUs
	defer llmtap.SetGPUOpener(fs.open)()
	p, _ := loadProxy(t, "llmtap {\n\t\tgpu {\n\t\t\tinterval 10ms\n\t\t}\n\t}", site{body: "respond ok"})
	for deadline := time.Now().Add(10 * time.Second); len(llmtap.LatestGPUSamples(nil)) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no GPU sample in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := p.metricValue(t, "hw_power_watts", map[string]string{"hw_id": "GPU-fake"}); v != 100 {
		t.Errorf("hw_power_watts{hw_id=\"GPU-fake\"} = %v on a config with only the llmtap app, want 100", v)
	}
}
