package otlp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/llmtap/llmtap/export/otel"
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
)

// childEnv, set to "1", makes the test binary run as the llmtap command (Caddy with the llmtap
// modules, as cmd/llmtap builds it) instead of running tests: TestFleetMetrics starts three
// llmtap processes this way, without a separate build.
const childEnv = "LLMTAP_E2E_FLEET_CHILD"

// fleetJob is the service.name of the fleet, which the Collector's Prometheus exporter turns
// into the job label.
const fleetJob = "llmtap-fleet"

// fleetStreams is how many streams each instance serves: different counts, so that each
// instance's series can be told from the others by its count alone as well as by its id.
var fleetStreams = []int{6, 8, 10}

const (
	fleetTokens = 12 // output tokens per stream
	fleetITL    = 5 * time.Millisecond
	fleetTTFT   = 30 * time.Millisecond
)

// fleetRecord holds the fields of a request record (GET /llmtap/requests) the test pools.
type fleetRecord struct {
	Class        string    `json:"class"`
	Error        string    `json:"error"`
	TTFTMs       *float64  `json:"ttft_ms"`
	ITLMs        *float64  `json:"itl_ms"`
	InterChunkMs []float64 `json:"inter_chunk_ms"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
}

// TestFleetMetrics runs three llmtap processes (real Caddy, each its own OpenTelemetry SDK)
// that proxy streams to the built-in mock and push OTLP to an OpenTelemetry Collector built
// from its Go modules (the otlp receiver feeding the Prometheus exporter, in this process),
// which Debian's Prometheus scrapes with native histograms on. No instance is given a
// service.instance.id: the default must keep them apart. Against the records pooled from the
// three instances' GET /llmtap/requests, it checks that the counts and token sums of the series
// summed over the instances are exact, that histogram_quantile over the summed histograms lies
// within one bucket's width of the pooled records' quantile (the bucket holding it), and that
// each instance's series carries its own instance label, the service.instance.id its process
// logged, with its own count. It runs once with the default explicit-bucket histograms and
// once with OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=base2_exponential_bucket_histogram
// (Prometheus native histograms), and logs the quantile errors of both for a 5 ms ITL.
func TestFleetMetrics(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("the prometheus server is not installed: run `make tools` (apt-get install prometheus)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.JitterCV = fleetTTFT, fleetITL, 0.1
	mockURL := startMock(t, cfg)

	for _, agg := range []string{"explicit_bucket_histogram", "base2_exponential_bucket_histogram"} {
		t.Run(agg, func(t *testing.T) {
			native := agg == "base2_exponential_bucket_histogram"
			grpcAddr, exportAddr := startCollector(t)
			env := []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + grpcAddr,
				"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
				"OTEL_METRIC_EXPORT_INTERVAL=300",
				"OTEL_TRACES_EXPORTER=none",
				"OTEL_SERVICE_NAME=" + fleetJob,
				"OTEL_RESOURCE_ATTRIBUTES=",
				"OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION=" + agg,
				llmtap.NativeHistogramsEnv + "=" + map[bool]string{true: "on", false: "off"}[native],
			}
			insts := make([]*instance, len(fleetStreams))
			admins := make([]string, len(insts))
			for i := range insts {
				insts[i] = startInstance(t, self, env, strings.TrimPrefix(mockURL, "http://"))
				admins[i] = insts[i].admin
			}
			prom := startFleetPrometheus(t, promBin, exportAddr, admins)
			var wg sync.WaitGroup
			errs := make([]error, len(insts))
			for i, in := range insts {
				wg.Go(func() { errs[i] = in.send(fleetStreams[i]) })
			}
			wg.Wait()
			var pooled []fleetRecord
			for i, in := range insts {
				if errs[i] != nil {
					t.Fatalf("instance %d: %v", i, errs[i])
				}
				pooled = append(pooled, in.records(t, fleetStreams[i])...)
			}
			byID, byTarget := map[string]float64{}, map[string]float64{}
			for i, in := range insts {
				byID[in.id], byTarget[in.admin] = float64(fleetStreams[i]), float64(fleetStreams[i])
			}
			if len(byID) != len(insts) {
				t.Errorf("the instances logged service.instance.id %v: not distinct", byID)
			}
			t.Run("collector", func(t *testing.T) { checkFleet(t, prom, fleetJob, byID, pooled, native) })
			t.Run("scrape", func(t *testing.T) { checkFleet(t, prom, "llmtap", byTarget, pooled, native) })
		})
	}
}

// instance is one llmtap process.
type instance struct {
	site, admin string
	log         string // its stderr, Caddy's JSON log
	id          string // the service.instance.id it logged
	cmd         *exec.Cmd
	exited      <-chan struct{} // closed when the process has exited
}

// startInstance runs the test binary as llmtap with a Caddyfile proxying to the mock, and
// returns once its admin API answers and it has logged its service.instance.id. The process
// is stopped by its PID (SIGINT, Caddy's graceful stop, which flushes the OTLP export) when the
// test ends.
func startInstance(t *testing.T, self string, env []string, mockAddr string) *instance {
	return startInstanceWith(t, self, env, mockAddr, func(string) string { return "llmtap" })
}

// startInstanceWith is startInstance with the site's llmtap directive written by handler,
// given the instance's own temporary folder.
func startInstanceWith(t *testing.T, self string, env []string, mockAddr string, handler func(dir string) string) *instance {
	t.Helper()
	dir := t.TempDir()
	in := &instance{site: testkit.FreeAddr(t), admin: testkit.FreeAddr(t), log: filepath.Join(dir, "llmtap.log")}
	caddyfile := fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %s
}

http://%s {
	%s
	reverse_proxy %s {
		flush_interval -1
	}
}
`, in.admin, filepath.Join(dir, "storage"), in.site, handler(dir), mockAddr)
	conf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(conf, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1", llmtap.DashboardEnv+"=off", "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)...)
	exited := startProcess(t, cmd, in.log, os.Interrupt)
	in.cmd, in.exited = cmd, exited
	idRE := regexp.MustCompile(`"service\.instance\.id":"([^"]*)"`)
	deadline := time.Now().Add(60 * time.Second)
	for logged := false; ; {
		b, _ := os.ReadFile(in.log)
		if m := idRE.FindSubmatch(b); m != nil {
			in.id = string(m[1])
			logged = true
		}
		if logged {
			if resp, err := http.Get("http://" + in.admin + "/config/"); err == nil {
				resp.Body.Close()
				return in
			}
		}
		select {
		case <-exited:
			t.Fatalf("llmtap exited before it was ready:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("llmtap not ready (admin answering, service.instance.id logged) after 60 s:\n%s", b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send sends n streaming chat completions one after another and reads each to its end.
func (in *instance) send(n int) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count the lighthouses."}]}`, model, fleetTokens)
	for range n {
		resp, err := client.Post("http://"+in.site+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("stream: %s, %v", resp.Status, err)
		}
	}
	return nil
}

// records returns the instance's n request records, waiting for its record pipeline to finish
// them (it runs behind the responses).
func (in *instance) records(t *testing.T, n int) []fleetRecord {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out []fleetRecord
		resp, err := http.Get("http://" + in.admin + "/llmtap/requests?limit=1000")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r fleetRecord
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("record %q: %v", sc.Bytes(), err)
			}
			out = append(out, r)
		}
		resp.Body.Close()
		if len(out) == n {
			for _, r := range out {
				if r.Error != "" || r.Class != "live" || r.TTFTMs == nil || r.ITLMs == nil || r.OutputTokens != fleetTokens {
					t.Fatalf("instance %s: record %+v, want a successful live stream of %d tokens", in.site, r, fleetTokens)
				}
			}
			return out
		}
		if len(out) > n || time.Now().After(deadline) {
			t.Fatalf("instance %s has %d records, want %d", in.site, len(out), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startProcess starts cmd with its output in the file logPath and returns a channel closed
// when it exits. When the test ends it sends stop to the process's PID, kills it if it has not
// exited 15 s later, and logs its output if the test failed.
func startProcess(t *testing.T, cmd *exec.Cmd, logPath string, stop os.Signal) <-chan struct{} {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(stop)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", cmd.Path, b)
		}
	})
	return exited
}

// startCollector runs the OpenTelemetry Collector's otlp receiver (gRPC) feeding its
// Prometheus exporter, both with their default configuration but the loopback addresses, and
// returns the receiver's and the exporter's host:port.
func startCollector(t *testing.T) (grpcAddr, exportAddr string) {
	t.Helper()
	ctx := context.Background()
	grpcAddr, exportAddr = testkit.FreeAddr(t), testkit.FreeAddr(t)
	ef := prometheusexporter.NewFactory()
	ecfg := ef.CreateDefaultConfig().(*prometheusexporter.Config)
	ecfg.ServerConfig.NetAddr.Endpoint = exportAddr
	exp, err := ef.CreateMetrics(ctx, exportertest.NewNopSettings(ef.Type()), ecfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	rf := otlpreceiver.NewFactory()
	rcfg := rf.CreateDefaultConfig().(*otlpreceiver.Config)
	rcfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = grpcAddr
	rcv, err := rf.CreateMetrics(ctx, receivertest.NewNopSettings(rf.Type()), rcfg, exp)
	if err != nil {
		t.Fatal(err)
	}
	if err := rcv.Start(ctx, componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rcv.Shutdown(context.Background()) })
	return grpcAddr, exportAddr
}

// startFleetPrometheus runs Debian's Prometheus with native histograms on and storage in a
// temporary folder, scraping every 500 ms the Collector's exporter with honor_labels (job and
// instance are the labels the exporter derives from service.name and service.instance.id) and
// each instance's /metrics as job llmtap (instance is the scrape target's address); stopped by
// its PID when the test ends. It returns the server's base URL.
func startFleetPrometheus(t *testing.T, bin, collector string, admins []string) string {
	t.Helper()
	dir := t.TempDir()
	conf := fmt.Sprintf("global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\nscrape_configs:\n"+
		"  - job_name: otel-collector\n    honor_labels: true\n    static_configs:\n      - targets: [%q]\n"+
		"  - job_name: llmtap\n    static_configs:\n      - targets: [%s]\n", collector, `"`+strings.Join(admins, `", "`)+`"`)
	confPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testkit.FreeAddr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	cmd := exec.Command(bin, "--config.file="+confPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn", "--enable-feature=native-histograms")
	exited := startProcess(t, cmd, logPath, syscall.SIGTERM)
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited before it was ready:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus not ready after 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promSample is one element of an instant query's vector: a float value or a native histogram.
type promSample struct {
	Metric    map[string]string  `json:"metric"`
	Value     [2]any             `json:"value"`
	Histogram [2]json.RawMessage `json:"histogram"`
}

// nativeHist is a native histogram as Prometheus's HTTP API returns it.
type nativeHist struct {
	Buckets [][]any `json:"buckets"` // [boundary rule, lower, upper, count]
}

// promAt is a Prometheus server and an evaluation time: every query of a check is evaluated at
// the one moment the wait found the fleet's series complete. A scrape that times out on a
// loaded machine marks its target's series stale from then on, and a query at a later moment
// would miss that instance.
type promAt struct{ base, at string }

// promQuery runs an instant query at p's time and returns its vector.
func promQuery(p promAt, expr string) ([]promSample, error) {
	resp, err := http.Get(p.base + "/api/v1/query?time=" + p.at + "&query=" + url.QueryEscape(expr))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("%s", out.Error)
	}
	return out.Data.Result, nil
}

// value is a sample's float value.
func (s promSample) value() float64 {
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// scalarQuery runs expr, which must give one float sample, and returns its value.
func scalarQuery(t *testing.T, p promAt, expr string) float64 {
	t.Helper()
	res, err := promQuery(p, expr)
	if err != nil || len(res) != 1 {
		t.Fatalf("query %s: %d samples, %v", expr, len(res), err)
	}
	return res[0].value()
}

// waitComplete polls, at the current time, until every expression of want gives its value (60 s
// at most: the instances export every 300 ms, Prometheus scrapes every 500 ms), and returns
// that moment.
func waitComplete(t *testing.T, base string, want map[string]float64) promAt {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		p := promAt{base, strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 3, 64)}
		var missing []string
		for expr, v := range want {
			res, err := promQuery(p, expr)
			if err != nil || len(res) != 1 || res[0].value() != v {
				missing = append(missing, fmt.Sprintf("%s: got %+v (%v), want %v", expr, res, err, v))
			}
		}
		if len(missing) == 0 {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %s", strings.Join(missing, "; "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bucketRange is one histogram bucket, (lower, upper].
type bucketRange struct{ lower, upper float64 }

// classicBuckets are the buckets of explicit bounds, the first from 0 as histogram_quantile
// takes it.
func classicBuckets(bounds []float64) []bucketRange {
	out := []bucketRange{{0, bounds[0]}}
	for i := 1; i < len(bounds); i++ {
		out = append(out, bucketRange{bounds[i-1], bounds[i]})
	}
	return append(out, bucketRange{bounds[len(bounds)-1], math.Inf(1)})
}

// nativeBuckets queries the native histogram expr (one sample) and returns its buckets.
func nativeBuckets(t *testing.T, p promAt, expr string) []bucketRange {
	t.Helper()
	res, err := promQuery(p, expr)
	if err != nil || len(res) != 1 || len(res[0].Histogram[1]) == 0 {
		t.Fatalf("query %s: %+v, %v; want one native histogram", expr, res, err)
	}
	var h nativeHist
	if err := json.Unmarshal(res[0].Histogram[1], &h); err != nil {
		t.Fatal(err)
	}
	var out []bucketRange
	for _, b := range h.Buckets {
		lo, _ := strconv.ParseFloat(fmt.Sprint(b[1]), 64)
		hi, _ := strconv.ParseFloat(fmt.Sprint(b[2]), 64)
		out = append(out, bucketRange{lo, hi})
	}
	return out
}

// nearestRank is the q-quantile of sorted values by the nearest-rank rule: the value of rank
// ceil(q*n), the one histogram_quantile's bucket holds.
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// widthAt is the width of the bucket holding v (+Inf when v is in none); the first bucket
// holds its lower bound too (0 for classic buckets).
func widthAt(buckets []bucketRange, v float64) float64 {
	for i, b := range buckets {
		if (v > b.lower || v == b.lower && i == 0) && v <= b.upper {
			return b.upper - b.lower
		}
	}
	return math.Inf(1)
}

// fleetHist is one histogram the test checks: its Prometheus name, its classic bounds, and
// the pooled values (in seconds) it was fed.
type fleetHist struct {
	name   string
	bounds []float64
	values []float64
}

// checkFleet checks the series of one job against the pooled records: job llmtap-fleet is
// the OTLP path through the Collector (instance = service.instance.id), job llmtap is Prometheus
// scraping each instance's /metrics itself (instance = the scrape target, Prometheus's own
// label). want maps each instance label to that instance's count of streams.
func checkFleet(t *testing.T, prom, job string, want map[string]float64, pooled []fleetRecord, native bool) {
	var ttft, itl, chunks []float64
	var chunkCount, in, out float64
	for _, r := range pooled {
		ttft = append(ttft, *r.TTFTMs/1000)
		itl = append(itl, *r.ITLMs/1000)
		for _, g := range r.InterChunkMs {
			chunks = append(chunks, g/1000)
		}
		chunkCount += float64(len(r.InterChunkMs))
		in += float64(r.InputTokens)
		out += float64(r.OutputTokens)
	}
	otlp := job == fleetJob
	total := float64(len(pooled))
	series := func(name, labels string) string { return fmt.Sprintf("%s{job=%q%s}", name, job, labels) }
	count := func(name string) string { return series(name+"_count", "") }
	sum := func(name, labels string) string { return "sum(" + series(name+"_sum", labels) + ")" }
	if native {
		count = func(name string) string { return "histogram_count(" + series(name, "") + ")" }
		sum = func(name, labels string) string { return "sum(histogram_sum(" + series(name, labels) + "))" }
	}
	// Counts and token sums, summed over the instances, equal the pooled records exactly. The
	// last export and scrape can lag: wait until the counts are complete, then all must be.
	complete := map[string]float64{"sum(" + count("gen_ai_client_operation_duration_seconds") + ")": total}
	if otlp {
		complete["sum("+count("gen_ai_client_operation_time_per_output_chunk_seconds")+")"] = chunkCount
	}
	p := waitComplete(t, prom, complete)
	exact := map[string]float64{
		"sum(" + count("gen_ai_server_time_to_first_token_seconds") + ")":   total,
		"sum(" + count("gen_ai_server_time_per_output_token_seconds") + ")": total,
		sum("gen_ai_client_token_usage", `,gen_ai_token_type="output"`):     out,
		sum("gen_ai_client_token_usage", `,gen_ai_token_type="input"`):      in,
	}
	if !otlp {
		exact["sum("+series("llmtap_requests_total", "")+")"] = total
	}
	for expr, want := range exact {
		if v := scalarQuery(t, p, expr); v != want {
			t.Errorf("%s = %v, want the pooled records' %v", expr, v, want)
		}
	}

	// One series per instance, each with that instance's own count.
	perInstance := "sum by (instance) (" + count("gen_ai_client_operation_duration_seconds") + ")"
	res, err := promQuery(p, perInstance)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range res {
		got[s.Metric["instance"]] = s.value()
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want each instance's own count under its own instance label: %v", perInstance, got, want)
	}

	// histogram_quantile over the summed histogram is within one bucket's width of the pooled
	// records' quantile: the width of the bucket holding that quantile.
	hists := []fleetHist{
		{"gen_ai_server_time_to_first_token_seconds", otel.TTFTBuckets, ttft},
		{"gen_ai_server_time_per_output_token_seconds", otel.TPOTBuckets, itl},
	}
	if otlp {
		hists = append(hists, fleetHist{"gen_ai_client_operation_time_per_output_chunk_seconds", otel.DurationBuckets, chunks})
	}
	for _, h := range hists {
		slices.Sort(h.values)
		summed := "sum by (le) (" + series(h.name+"_bucket", "") + ")"
		buckets := classicBuckets(h.bounds)
		if native {
			summed = "sum(" + series(h.name, "") + ")"
			buckets = nativeBuckets(t, p, summed)
		}
		for _, q := range []float64{0.5, 0.9, 0.99} {
			est := scalarQuery(t, p, fmt.Sprintf("histogram_quantile(%v, %s)", q, summed))
			truth := nearestRank(h.values, q)
			width := widthAt(buckets, truth)
			t.Logf("job %s, %s p%v: histogram_quantile %.6f s, pooled records %.6f s, error %+.6f s (%+.1f%%), bucket width %.6f s",
				job, h.name, q*100, est, truth, est-truth, 100*(est-truth)/truth, width)
			if math.Abs(est-truth) > width*(1+1e-9) {
				t.Errorf("job %s, %s p%v: histogram_quantile %v s, pooled records %v s: further apart than the bucket's width %v s",
					job, h.name, q*100, est, truth, width)
			}
		}
	}
}
