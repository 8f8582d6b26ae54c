package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/load/bench"
	"github.com/llmtap/llmtap/load/workload"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// benchRun is everything a bench run left: exit code and error, console streams, the result
// and the spec, and the parsed JSON summary.
type benchRun struct {
	code        int
	err         error
	out, errOut string
	res         *bench.Result
	spec        *bench.Spec
	summary     map[string]any
	dir         string
}

func runBenchFull(t *testing.T, args ...string) benchRun {
	t.Helper()
	r := benchRun{dir: t.TempDir()}
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	args = append(args, "--artifact-dir", r.dir)
	r.code, r.err = benchMain(context.Background(), &out, &errOut, false, fs, args, func(s *bench.Spec, res *bench.Result) {
		s.Keep = true
		r.spec, r.res = s, res
	})
	r.out, r.errOut = out.String(), errOut.String()
	if b, err := os.ReadFile(filepath.Join(r.dir, "profile_export_aiperf.json")); err == nil {
		json.Unmarshal(b, &r.summary)
	}
	return r
}

// avg is a metric's avg in the summary, -1 when absent.
func (r benchRun) avg(tag string) float64 {
	m, ok := r.summary[tag].(map[string]any)
	if !ok {
		return -1
	}
	return m["avg"].(float64)
}

// TestBenchReasoningMeaningsAndGoodputDirection: on a reasoning model, output_token_count is
// AIPerf's (without the reasoning tokens), output_sequence_length and total_osl count them,
// the throughput is over OSL; and --goodput output_token_count:N means ≥ N, which the console
// says once.
func TestBenchReasoningMeaningsAndGoodputDirection(t *testing.T) {
	cfg := fastMock()
	cfg.Reasoning = 3
	_, url := testkit.StartMock(t, cfg)
	r := runBenchFull(t, "--url", url, "--model", "m", "--concurrency", "2", "--request-count", "10",
		"--isl", "20", "--osl", "8", "--extra-inputs", "ignore_eos:true", "--goodput", "output_token_count:4")
	if r.code != 0 {
		t.Fatalf("exit %d: %v\n%s\n%s", r.code, r.err, r.out, r.errOut)
	}
	want := map[string]float64{
		stats.TagOutputTokenCount:  5, // 8 generated, 3 of them reasoning
		stats.TagReasoningTokens:   3,
		stats.TagOutputSeqLength:   8,
		stats.TagTotalOutputTokens: 50,
		stats.TagTotalOSL:          80,
		stats.TagTotalReasoning:    30,
		stats.TagGoodRequestCount:  10, // 5 ≥ 4; as ≤ 4 none would be good
	}
	for tag, v := range want {
		if got := r.avg(tag); got != v {
			t.Errorf("%s = %v, want %v", tag, got, v)
		}
	}
	if tp, d := r.avg(stats.TagOutputThroughput), r.avg(stats.TagBenchmarkDuration); d <= 0 || !near(tp, 80/d, 1e-9) {
		t.Errorf("output_token_throughput %v over %v s, want total_osl / duration", tp, d)
	}
	if n := strings.Count(r.errOut, "note: --goodput output_token_count:4 now means output_token_count>=4"); n != 1 {
		t.Errorf("the changed meaning is said %d times, want once:\n%s", n, r.errOut)
	}
	for _, l := range readLines(t, filepath.Join(r.dir, "profile_export.jsonl")) {
		m := l["metrics"].(map[string]any)
		if m["output_token_count"].(map[string]any)["value"] != 5.0 || m["output_sequence_length"].(map[string]any)["value"] != 8.0 {
			t.Fatalf("line metrics %v: want output_token_count 5, output_sequence_length 8", m)
		}
	}
}

func near(a, b, rel float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= rel*max(a, b, -a, -b)
}

// TestBenchHTTPErrorsCount: HTTP 500s are errors in AIPerf's counts (error_request_count,
// good_request_fraction), and the console says what they were.
func TestBenchHTTPErrorsCount(t *testing.T) {
	cfg := fastMock()
	cfg.ErrorRate = 0.3
	cfg.Seed = 7
	_, url := testkit.StartMock(t, cfg)
	r := runBenchFull(t, "--url", url, "--model", "m", "--concurrency", "2", "--request-count", "20",
		"--isl", "20", "--osl", "4", "--goodput", "request_latency:60000")
	if r.code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.out)
	}
	failed := 0
	for _, l := range readLines(t, filepath.Join(r.dir, "profile_export.jsonl")) {
		if e, ok := l["error"].(map[string]any); ok {
			failed++
			// AIPerf's aiohttp client: code the status, type its reason phrase (docs/metrics.md).
			if e["code"] != 500.0 || e["type"] != "Internal Server Error" {
				t.Errorf("error %v, want code 500, type Internal Server Error", e)
			}
		}
	}
	if failed == 0 || failed == 20 {
		t.Fatalf("%d of 20 requests failed; the mock's seed should fail some", failed)
	}
	if got := r.avg(stats.TagErrorRequestCount); got != float64(failed) {
		t.Errorf("error_request_count %v, want the %d HTTP 500s", got, failed)
	}
	if got, want := r.avg(stats.TagGoodRequestFrac), float64(20-failed)/20; !near(got, want, 1e-12) {
		t.Errorf("good_request_fraction %v, want %v", got, want)
	}
	if !strings.Contains(r.out, fmt.Sprintf("%d × Internal Server Error 500:", failed)) {
		t.Errorf("the console does not say what failed:\n%s", r.out)
	}
}

// TestBenchAllFailPrintsCause: when every request fails, the console and the error say why,
// not only the error class.
func TestBenchAllFailPrintsCause(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	r := runBenchFull(t, "--url", url, "--model", "m", "--concurrency", "2", "--request-count", "6", "--isl", "10")
	if r.code != 1 || r.err == nil {
		t.Fatalf("exit %d, error %v; want 1 and an error", r.code, r.err)
	}
	for _, where := range []string{r.out, r.err.Error()} {
		if !strings.Contains(where, "connection refused") {
			t.Errorf("the cause (connection refused) is not said:\n%s", where)
		}
	}
}

// TestBenchNoContentIsNotValid: a 2xx response without generated content is not a valid
// request in AIPerf's counts.
func TestBenchNoContentIsNotValid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	r := runBenchFull(t, "--url", srv.URL, "--model", "m", "--concurrency", "1", "--request-count", "4",
		"--isl", "10", "--streaming=false")
	if got := r.avg(stats.TagRequestCount); got != 0 {
		t.Errorf("request_count %v: an empty answer was counted as valid", got)
	}
	if got := r.avg(stats.TagErrorRequestCount); got != 4 {
		t.Errorf("error_request_count %v, want 4", got)
	}
	if !strings.Contains(r.out, stats.ErrNoContent) {
		t.Errorf("the console does not say why:\n%s", r.out)
	}
}

// TestBenchGraceInfinite: --benchmark-grace-period inf (as AIPerf documents it) waits for every
// response instead of overflowing into a cut before anything is sent.
func TestBenchGraceInfinite(t *testing.T) {
	mock, url := testkit.StartMock(t, fastMock())
	r := runBenchFull(t, "--url", url, "--model", "m", "--concurrency", "2", "--benchmark-duration", "0.3",
		"--benchmark-grace-period", "inf", "--isl", "10", "--osl", "4")
	if r.code != 0 {
		t.Fatalf("exit %d: %v\n%s", r.code, r.err, r.out)
	}
	if n := mock.Stats().Requests; n == 0 || r.avg(stats.TagRequestCount) != float64(n) {
		t.Errorf("the mock saw %d requests, request_count %v: want every one sent and measured", n, r.avg(stats.TagRequestCount))
	}
	if r.avg(stats.TagErrorRequestCount) != 0 {
		t.Errorf("error_request_count %v, want 0", r.avg(stats.TagErrorRequestCount))
	}
}

// TestBenchGraceLeavesUnfinishedOut: requests still open when the grace period ends are left
// out of the results (AIPerf's rule), not counted as failures.
func TestBenchGraceLeavesUnfinishedOut(t *testing.T) {
	cfg := fastMock()
	cfg.ITL = 20 * time.Millisecond // 20 tokens: 0.4 s a request
	_, url := testkit.StartMock(t, cfg)
	r := runBenchFull(t, "--url", url, "--model", "m", "--concurrency", "3", "--benchmark-duration", "0.5",
		"--benchmark-grace-period", "0", "--isl", "10", "--osl", "20", "--extra-inputs", "ignore_eos:true")
	if r.res == nil {
		t.Fatalf("no result: exit %d: %v", r.code, r.err)
	}
	if got := r.avg(stats.TagErrorRequestCount); got != 0 {
		t.Errorf("error_request_count %v: the requests cut at the end of the grace period were counted as failures\n%s", got, r.out)
	}
	if r.res.Export.Unfinished == 0 || r.summary["unfinished_request_count"] != float64(r.res.Export.Unfinished) {
		t.Errorf("unfinished %d (summary %v): the concurrency-3 loop had requests open at the cut", r.res.Export.Unfinished, r.summary["unfinished_request_count"])
	}
	if lines := readLines(t, filepath.Join(r.dir, "profile_export.jsonl")); float64(len(lines)) != r.avg(stats.TagRequestCount) {
		t.Errorf("%d export lines, request_count %v: the unfinished requests must not be lines", len(lines), r.avg(stats.TagRequestCount))
	}
	if !strings.Contains(r.out, "still open when the grace period ended") {
		t.Errorf("the console does not say so:\n%s", r.out)
	}
}

// TestReplayGracePeriod: llmtap replay stops waiting --benchmark-grace-period after the trace's
// last request is due, and leaves the requests still open out.
func TestReplayGracePeriod(t *testing.T) {
	cfg := fastMock()
	cfg.ITL = 50 * time.Millisecond // 40 tokens: 2 s a request
	_, url := testkit.StartMock(t, cfg)
	tr := filepath.Join(t.TempDir(), "trace.jsonl")
	os.WriteFile(tr, []byte(`{"timestamp":0,"input_length":10,"output_length":40}
{"timestamp":100,"input_length":10,"output_length":40}
`), 0o600)
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	var res *bench.Result
	code, err := replayMain(context.Background(), &out, &errOut, false, fs, []string{"--url", url, "--model", "m",
		"--benchmark-grace-period", "0.2", "--extra-inputs", "ignore_eos:true", "--artifact-dir", t.TempDir(), tr},
		func(s *bench.Spec, r *bench.Result) { res = r })
	if res == nil {
		t.Fatalf("no result: exit %d: %v", code, err)
	}
	if res.Export.Unfinished != 2 {
		t.Errorf("%d requests left out as unfinished, want both (each takes 2 s, the grace ends at 0.3 s)\n%s", res.Export.Unfinished, out.String())
	}
}

// TestRandomSeedZeroIsASeed: --random-seed 0 is the seed 0, as in AIPerf; unset is 42.
func TestRandomSeedZeroIsASeed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want uint64
	}{{[]string{"--random-seed", "0"}, 0}, {nil, workload.DefaultSeed}, {[]string{"--random-seed", "7"}, 7}} {
		var cf clientFlags
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		cf.register(fs)
		if err := fs.Parse(append([]string{"--model", "m"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if r, errs := cf.resolve(); len(errs) > 0 || r.seed != tc.want {
			t.Errorf("%v: seed %d (%v), want %d", tc.args, r.seed, errs, tc.want)
		}
	}
}
