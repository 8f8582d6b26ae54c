package scrape

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmtap/llmtap/telemetry/gpu"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// pageEvents records what Pages reports.
type pageEvents struct {
	mu         sync.Mutex
	server     map[string]int
	errs       map[string]int
	mismatches []ServerKind
	gpuPolls   int
	gpuStops   int
}

func (e *pageEvents) count(f func() int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return f()
}

func (e *pageEvents) pages(client *http.Client) *Pages {
	e.server, e.errs = map[string]int{}, map[string]int{}
	return &Pages{
		OnServer: func(url string, _ *ServerMetrics) { e.mu.Lock(); e.server[url]++; e.mu.Unlock() },
		OnError:  func(p Page, _ error) { e.mu.Lock(); e.errs[p.URL]++; e.mu.Unlock() },
		OnKindMismatch: func(_ Page, k ServerKind) {
			e.mu.Lock()
			e.mismatches = append(e.mismatches, k)
			e.mu.Unlock()
		},
		OnGPU:     func([]gpu.Sample) { e.mu.Lock(); e.gpuPolls++; e.mu.Unlock() },
		OnGPUStop: func() { e.mu.Lock(); e.gpuStops++; e.mu.Unlock() },
		Fetch:     Options{Client: client},
	}
}

// TestPages reads a server page, a failing page and a dcgm page on real HTTP: reads reach
// OnServer and OnGPU, a page that keeps failing is reported once, a page of another kind than
// configured once; a reconfiguration keeps the pages it names and stops the others; Close
// stops the rest (goleak checks the goroutines in TestMain).
func TestPages(t *testing.T) {
	vllm, client := servePage(t, readFixture(t, "vllm.prom"))
	dcgm, _ := servePage(t, readFixture(t, "dcgm.prom"))
	var failures atomic.Int64
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		failures.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	defer client.CloseIdleConnections()

	var e pageEvents
	p := e.pages(client)
	tick := 5 * time.Millisecond
	server := Page{URL: vllm, Kind: string(KindSGLang), Interval: tick} // the page is vLLM's
	failing := Page{URL: bad.URL, Interval: tick}
	gpuPage := Page{URL: dcgm, Kind: KindDCGM, Interval: tick}
	p.Configure([]Page{server, failing, gpuPage})
	waitFor(t, "three reads of each page", func() bool {
		return e.count(func() int { return min(e.server[vllm], e.gpuPolls) }) >= 3 && failures.Load() >= 3
	})
	e.mu.Lock()
	if e.errs[bad.URL] != 1 || len(e.mismatches) != 1 || e.mismatches[0] != KindVLLM || e.errs[vllm] != 0 {
		t.Errorf("errors %v, kind mismatches %v; want one error for the failing page, one mismatch (vllm)", e.errs, e.mismatches)
	}
	e.mu.Unlock()

	kept := p.pages[server]
	p.Configure([]Page{server})
	if len(p.pages) != 1 || p.pages[server] != kept {
		t.Errorf("reconfigured to the server page alone: %d pages, same reader %v", len(p.pages), p.pages[server] == kept)
	}
	if got := e.count(func() int { return e.gpuStops }); got != 1 {
		t.Errorf("OnGPUStop called %d times when the dcgm page stopped, want 1", got)
	}
	stopped := failures.Load()
	if err := p.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(p.pages) != 0 {
		t.Errorf("%d pages left after Close", len(p.pages))
	}
	if n := failures.Load(); n > stopped+1 { // at most the read under way when it stopped
		t.Errorf("the failing page was read %d more times after it was dropped", n-stopped)
	}
}

// TestValidatePages: each bad field is reported with its page, and a second dcgm page.
func TestValidatePages(t *testing.T) {
	ok := Page{URL: "http://127.0.0.1:8000/metrics"}
	tests := []struct {
		name  string
		pages []Page
		want  string // "" = valid
	}{
		{"a server page, kind detected", []Page{ok}, ""},
		{"every kind", []Page{{URL: ok.URL, Kind: "vllm"}, {URL: ok.URL, Kind: "sglang"}, {URL: ok.URL, Kind: "tgi"}, {URL: ok.URL, Kind: KindDCGM}}, ""},
		{"no URL", []Page{{}}, `scrape 0 (): url ""`},
		{"not http", []Page{ok, {URL: "ftp://h/m"}}, `scrape 1 (ftp://h/m): url "ftp://h/m"`},
		{"no host", []Page{{URL: "http:///metrics"}}, "is not an http:// or https:// address"},
		{"an unknown kind", []Page{{URL: ok.URL, Kind: "triton"}}, `kind "triton" is not a known kind`},
		{"a negative interval", []Page{{URL: ok.URL, Interval: -time.Second}}, "interval must be positive"},
		{"two dcgm pages would count each GPU twice", []Page{{URL: ok.URL, Kind: KindDCGM}, {URL: ok.URL + "2", Kind: KindDCGM}}, "2 dcgm pages"},
	}
	for _, tt := range tests {
		err := ValidatePages(tt.pages)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
