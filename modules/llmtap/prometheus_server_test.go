package llmtap_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// TestPrometheusServerScrapesTTFT runs a real Prometheus server (Debian's prometheus package,
// installed by `make tools`) on loopback, scraping Caddy's admin /metrics every 500 ms, sends
// streaming requests through llmtap to a mock whose time to first token is 300 ms, and asks
// Prometheus for the TTFT quantiles with histogram_quantile over the GenAI histogram. A TTFT is
// never below the mock's (it includes it) and is 300 ms plus the proxy hop, so it falls in the
// (0.25, 0.5] bucket: the median must lie in it, and p99 in it or, should a loaded machine have
// held one request back by more than 200 ms, in the next bucket up to 0.75. A TTFT taken at the
// wrong event (the role-only first chunk, the headers) or in the wrong unit lands elsewhere.
func TestPrometheusServerScrapesTTFT(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("the prometheus server is not installed: run `make tools` (apt-get install prometheus)")
	}
	cfg := streamingMock()
	cfg.TTFT, cfg.ITL, cfg.JitterCV = 300*time.Millisecond, time.Millisecond, 0
	up := startUpstream(t, cfg)
	p, _ := loadProxy(t, "", proxySite(up.addr, ""))
	// A GPU the machine does not have, exported the way the sampler's polls are.
	llmtap.Running().Hub.OnGPU([]gpu.Sample{{UUID: "GPU-prom-0", Name: "NVIDIA H200", PowerMW: 412500, EnergyMJ: 98765000,
		GPUUtil: 93, MemUsed: 100 << 30, MemTotal: 141 << 30, Valid: gpu.FieldPower | gpu.FieldEnergy | gpu.FieldUtil | gpu.FieldMemory}}, 0)
	prom := startPrometheus(t, bin, strings.TrimPrefix(p.admin, "http://"))

	// The first scrape must succeed before traffic, so the series are seen from the start.
	waitQuery(t, prom, `up{job="llmtap"}`, func(v float64) bool { return v == 1 })

	// The collectors are process-wide: a model name of its own isolates this test's series.
	const requests = 8
	model := ownName("prom-server-model-")
	c := newClient(t)
	for range requests {
		resp, _, err := testkit.PostJSON(t.Context(), c, p.sites[0]+"/v1/chat/completions", "", chatBody(model, 4, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v %v", resp, err)
		}
	}
	waitIdle(t)
	sel := fmt.Sprintf(`{model=%q,class="live"}`, model)
	waitQuery(t, prom, "gen_ai_server_time_to_first_token_seconds_count"+sel, func(v float64) bool { return v == requests })
	for _, c := range []struct{ q, max float64 }{{0.5, 0.5}, {0.99, 0.75}} {
		expr := fmt.Sprintf(`histogram_quantile(%v, sum by (le) (gen_ai_server_time_to_first_token_seconds_bucket%s))`, c.q, sel)
		v := query(t, prom, expr)
		t.Logf("Prometheus: %s = %.4f s (mock TTFT 0.300 s)", expr, v)
		if !(v > 0.25 && v <= c.max) {
			t.Errorf("TTFT p%v from Prometheus = %v s, want in (0.25, %v]: the mock's TTFT is 0.3 s", c.q*100, v, c.max)
		}
	}

	// gen_ai.client.operation.duration counts every request, as the OTel export does. A scrape
	// gathers the collectors concurrently, so the one that first showed every TTFT may have
	// read this histogram just before the last record reached it: the next scrape has it.
	waitQuery(t, prom, "gen_ai_client_operation_duration_seconds_count"+sel, func(v float64) bool { return v == requests })

	// The GPU readings of the OTel export, under the names the OTel-to-Prometheus translation
	// gives them.
	for expr, want := range map[string]float64{
		`hw_power_watts{hw_id="GPU-prom-0",hw_name="NVIDIA H200",hw_type="gpu"}`: 412.5,
		`hw_energy_joules_total{hw_id="GPU-prom-0"}`:                             98765,
		`hw_gpu_utilization_ratio{hw_id="GPU-prom-0",hw_gpu_task="general"}`:     0.93,
		`hw_gpu_memory_usage_bytes{hw_id="GPU-prom-0"}`:                          100 << 30,
		`hw_gpu_memory_limit_bytes{hw_id="GPU-prom-0"}`:                          141 << 30,
	} {
		if v := query(t, prom, expr); v != want {
			t.Errorf("%s = %v, want %v", expr, v, want)
		}
	}
	if v, err := tryQuery(prom, `hw_temperature_celsius{hw_id="GPU-prom-0"}`); err == nil {
		t.Errorf("hw_temperature_celsius = %v for a GPU that reported no temperature", v)
	}
}

// startPrometheus runs prometheus with a generated config scraping target every 500 ms (a
// scrape of the whole registry can take a few hundred ms when the package's tests load both
// cores), its
// storage in a temporary folder, on a free loopback port, and stops it by PID when the test
// ends. It returns the server's base URL once it answers.
func startPrometheus(t *testing.T, bin, target string) string {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf(`global:
  scrape_interval: 500ms
  scrape_timeout: 500ms
scrape_configs:
  - job_name: llmtap
    metrics_path: /metrics
    static_configs:
      - targets: [%q]
`, target)
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+confPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs an instant query and returns its single value (NaN-free; fails the test when the
// result is not exactly one sample).
func query(t *testing.T, base, expr string) float64 {
	t.Helper()
	v, err := tryQuery(base, expr)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return v
}

// waitQuery polls expr until ok accepts its value (30 s at most: scrapes every 500 ms).
func waitQuery(t *testing.T, base, expr string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := tryQuery(base, expr)
		if err == nil && ok(v) {
			return
		}
		if time.Now().After(deadline) {
			targets := "(unavailable)"
			if resp, err := http.Get(base + "/api/v1/targets"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				targets = string(b)
			}
			t.Fatalf("query %s: last value %v, error %v after 30 s; targets: %s", expr, v, err, targets)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tryQuery(base, expr string) (float64, error) {
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("decoding %s: %w", b, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("prometheus: %s", r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, fmt.Errorf("%d samples, want 1", len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}
