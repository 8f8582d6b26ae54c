package parquet

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/duckdb/duckdb-go/v2"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/modules/llmtap"
	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// childEnv, set to "1", makes the test binary run as the llmtap command (Caddy with the llmtap
// modules): the test starts three llmtap processes this way.
const childEnv = "LLMTAP_E2E_PARQUET_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		caddycmd.Main()
		return
	}
	code := m.Run()
	_ = caddy.Stop()
	os.Exit(code)
}

const model = "pq-model"

// perInstance is how many requests each instance serves: different counts, so that a lost or
// doubled instance shows in every sum.
var perInstance = []int{20, 27, 34}

var tenants = []string{"acme", "globex", "initech"}

// instance is one llmtap process recording Parquet into dir.
type instance struct {
	site, admin, dir string
	exited           <-chan struct{}
	cmd              *exec.Cmd
}

func startInstance(t *testing.T, self, mockAddr, dir string) *instance {
	t.Helper()
	work := t.TempDir()
	in := &instance{site: testkit.FreeAddr(t), admin: testkit.FreeAddr(t), dir: dir}
	conf := filepath.Join(work, "Caddyfile")
	caddyfile := fmt.Sprintf(`{
	admin %s
	default_bind 127.0.0.1
	auto_https off
	persist_config off
	storage file_system %s
	llmtap {
		list_price %s {
			input 2
			output 8
		}
	}
}

http://%s {
	llmtap {
		tenant header X-Tenant
		record %s {
			format parquet
			rotate_rows 9
		}
	}
	reverse_proxy %s {
		flush_interval -1
	}
}
`, in.admin, filepath.Join(work, "storage"), model, in.site, dir, mockAddr)
	if err := os.WriteFile(conf, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	in.cmd = exec.Command(self, "run", "--config", conf, "--adapter", "caddyfile")
	in.cmd.Env = append(os.Environ(), childEnv+"=1", llmtap.DashboardEnv+"=off", "OTEL_SDK_DISABLED=true",
		"XDG_DATA_HOME="+work, "XDG_CONFIG_HOME="+work)
	logPath := filepath.Join(work, "llmtap.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	in.cmd.Stdout, in.cmd.Stderr = logf, logf
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = in.cmd.Wait(); logf.Close(); close(exited) }()
	in.exited = exited
	t.Cleanup(func() {
		in.stop()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("instance %s log:\n%s", in.site, b)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := http.Get("http://" + in.admin + "/config/"); err == nil {
			resp.Body.Close()
			return in
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("llmtap exited before it was ready:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("llmtap not ready after 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGINT to the process (Caddy's graceful stop closes the recorder, which writes
// the Parquet footers) and waits for it, killing it after 15 s.
func (in *instance) stop() {
	select {
	case <-in.exited:
		return
	default:
	}
	_ = in.cmd.Process.Signal(os.Interrupt)
	select {
	case <-in.exited:
	case <-time.After(15 * time.Second):
		_ = in.cmd.Process.Kill()
		<-in.exited
	}
}

// send sends n streaming chat completions, tenant and length varying by request.
func (in *instance) send(n, k int) error {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for i := range n {
		body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Count the lighthouses %s."}]}`,
			model, 4+(i*7+k)%23, strings.Repeat("again ", i%5))
		req, _ := http.NewRequest(http.MethodPost, "http://"+in.site+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Tenant", tenants[(i+k)%len(tenants)])
		resp, err := client.Do(req)
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

// records returns the instance's n records as GET /llmtap/requests serves them: the JSON
// lines the recorder would write to a JSONL records file.
func (in *instance) records(t *testing.T, n int) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + in.admin + "/llmtap/requests?limit=1000")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		lines := bytes.Count(b, []byte("\n"))
		if lines == n {
			return b
		}
		if lines > n || time.Now().After(deadline) {
			t.Fatalf("instance %s has %d records, want %d", in.site, lines, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// html renders the report of the run at path, as `llmtap report` does, with a fixed time and
// the files read named alike (the report lists them: JSONL and Parquet files differ in name).
func html(t *testing.T, path string) (*report.Report, []byte) {
	t.Helper()
	run, err := report.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Files) == 0 {
		t.Fatalf("%s: no file read", path)
	}
	run.Files = []string{"the run's files"}
	rep, err := report.Build(run)
	if err != nil {
		t.Fatal(err)
	}
	rep.Generated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return rep, b.Bytes()
}

// TestParquetDuckDB: three llmtap instances record Parquet; their records as JSONL and as
// Parquet give the same report, and DuckDB's SQL over the Parquet gives the report's
// per-tenant requests, token sums and list costs, and its TTFT and ITL percentiles within
// the histograms' precision.
func TestParquetDuckDB(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.JitterCV, cfg.Usage = 15*time.Millisecond, 2*time.Millisecond, 0.3, mock.UsageAlways
	_, mockURL := testkit.StartMock(t, cfg)

	root := t.TempDir()
	pq := filepath.Join(root, "parquet", "run") // one folder per instance below
	js := filepath.Join(root, "jsonl", "run")
	if err := os.MkdirAll(js, 0o700); err != nil {
		t.Fatal(err)
	}
	insts := make([]*instance, len(perInstance))
	for i := range insts {
		insts[i] = startInstance(t, self, strings.TrimPrefix(mockURL, "http://"), filepath.Join(pq, fmt.Sprintf("instance-%d", i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(insts))
	for i, in := range insts {
		wg.Go(func() { errs[i] = in.send(perInstance[i], i) })
	}
	wg.Wait()
	for i, in := range insts {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		lines := in.records(t, perInstance[i])
		if err := os.WriteFile(filepath.Join(js, fmt.Sprintf("records-%d.jsonl", i)), lines, 0o600); err != nil {
			t.Fatal(err)
		}
		in.stop() // closes the Parquet files
	}

	_, htmlJ := html(t, js)
	repP, htmlP := html(t, pq)
	total := 0
	for _, n := range perInstance {
		total += n
	}
	if n := len(repP.Runs[0].Records); n != total {
		t.Fatalf("the Parquet run has %d records, want %d", n, total)
	}
	if !bytes.Equal(htmlJ, htmlP) {
		a, b := string(htmlJ), string(htmlP)
		i := 0
		for i < min(len(a), len(b)) && a[i] == b[i] {
			i++
		}
		t.Fatalf("the reports of the JSONL and the Parquet records differ at byte %d:\nJSONL:   %q\nParquet: %q", i, a[max(0, i-200):min(len(a), i+200)], b[max(0, i-200):min(len(b), i+200)])
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := filepath.Join(pq, "*", "dt=*", "hour=*", "records-*.parquet")
	src := fmt.Sprintf("read_parquet('%s', hive_partitioning = true)", files)

	// Usage per tenant: exact counts and token sums; list costs to the last bits of a float
	// sum taken in another order.
	usage := map[string]stats.Usage{}
	for _, u := range repP.Usage {
		if u.Model != model || u.Class != "live" {
			t.Fatalf("usage row %+v: want one model and class", u)
		}
		usage[u.Tenant] = u.Usage
	}
	if len(usage) != len(tenants) {
		t.Fatalf("report usage rows %v, want one per tenant %v", usage, tenants)
	}
	rows, err := db.Query(`SELECT tenant, count(*), count(*) FILTER (WHERE error <> ''),
		sum(input_tokens), sum(output_tokens), sum(list_cost.total), count(DISTINCT hour)
		FROM ` + src + ` GROUP BY tenant ORDER BY tenant`)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for rows.Next() {
		var tenant string
		var n, failed, in, out, hours int64
		var cost float64
		if err := rows.Scan(&tenant, &n, &failed, &in, &out, &cost, &hours); err != nil {
			t.Fatal(err)
		}
		seen++
		u := usage[tenant]
		if n != u.Requests || failed != u.Errors || in != u.InputTokens || out != u.OutputTokens {
			t.Errorf("tenant %s: DuckDB %d requests, %d failed, %d input and %d output tokens; report %d, %d, %d, %d",
				tenant, n, failed, in, out, u.Requests, u.Errors, u.InputTokens, u.OutputTokens)
		}
		if u.ListCost <= 0 || math.Abs(cost-u.ListCost) > 1e-12*u.ListCost {
			t.Errorf("tenant %s: DuckDB list cost %v, report %v", tenant, cost, u.ListCost)
		}
		if hours < 1 {
			t.Errorf("tenant %s: no hour partition column", tenant)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != len(tenants) {
		t.Fatalf("DuckDB found %d tenants, want %d", seen, len(tenants))
	}

	// Percentiles of the report's group (model, class, status class): numpy's linear
	// percentiles, which DuckDB's quantile_cont computes exactly; the report's come from
	// HdrHistograms of 3 significant digits (each order statistic within 1/2048 of its value,
	// plus half a microsecond).
	var sum *report.SummaryRow
	for i, s := range repP.Summary {
		if s.Key == (stats.Key{Model: model, Class: "live", StatusClass: "2xx"}) {
			sum = &repP.Summary[i]
		}
	}
	if sum == nil || sum.Requests != int64(total) {
		t.Fatalf("no summary row of %d live 2xx requests of %s: %+v", total, model, repP.Summary)
	}
	qs := []float64{0.5, 0.9, 0.99}
	for _, m := range []struct {
		col  string
		stat stats.Stat
	}{{"ttft_ms", sum.TTFT}, {"itl_ms", sum.ITL}, {"request_latency_ms", sum.Latency}} {
		var got [3]float64
		err := db.QueryRow(fmt.Sprintf(`SELECT quantile_cont(%[1]s, 0.5), quantile_cont(%[1]s, 0.9), quantile_cont(%[1]s, 0.99)
			FROM %[2]s WHERE model = '%[3]s' AND class = 'live' AND status BETWEEN 200 AND 299 AND %[1]s IS NOT NULL`, m.col, src, model)).
			Scan(&got[0], &got[1], &got[2])
		if err != nil {
			t.Fatal(err)
		}
		want := [3]float64{m.stat.P50, m.stat.P90, m.stat.P99}
		for i := range qs {
			if tol := math.Abs(got[i])/1024 + 0.001; math.Abs(got[i]-want[i]) > tol {
				t.Errorf("%s p%v: DuckDB %v ms, report %v ms (tolerance %v)", m.col, 100*qs[i], got[i], want[i], tol)
			}
		}
		t.Logf("%s p50/p90/p99: DuckDB %.4f/%.4f/%.4f ms, report %.4f/%.4f/%.4f ms", m.col, got[0], got[1], got[2], want[0], want[1], want[2])
	}
}
