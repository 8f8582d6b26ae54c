package commands

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// proxyRecording starts real Caddy with llmtap recording to dir in front of upstream and
// returns the site's address and a stop function (stopping flushes the recorder).
func proxyRecording(t *testing.T, dir, upstream string) (string, func()) {
	t.Helper()
	admin, site := testkit.FreeAddr(t), testkit.FreeAddr(t)
	cf := fmt.Sprintf(surfacesCaddyfile, admin, "", site, dir, strings.TrimPrefix(upstream, "http://"))
	return site, startStoppable(t, "recording.Caddyfile", cf)
}

// startStoppable starts Caddy with the Caddyfile text cf (named name) and returns a function
// that stops it once (stopping flushes recorders); the test's end stops it too.
func startStoppable(t *testing.T, name, cf string) func() {
	t.Helper()
	testkit.Load(t, testkit.Adapt(t, name, cf))
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := caddy.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

// runReportArgs runs `llmtap report` in-process and returns its exit code and stdout.
func runReportArgs(t *testing.T, args ...string) (int, string) {
	t.Helper()
	// runReport prints to os.Stdout: send it to a file for the test's look.
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = f
	var errOut bytes.Buffer
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	code, err := runReport(fs, args)
	os.Stdout = old
	if err != nil {
		t.Logf("report error: %v\n%s", err, errOut.String())
	}
	b, _ := os.ReadFile(f.Name())
	return code, string(b)
}

// verdictLine is the verdict's closing line.
func verdictLine(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "verdict: ") {
			return l
		}
	}
	t.Fatalf("no verdict in:\n%s", out)
	return ""
}

// TestReplayFidelity records bursty traffic (gamma arrivals, CV about 1.4) through real Caddy
// with llmtap's recorder in front of the mock, then replays the recording through a recording
// proxy against the same mock configuration and against one whose TTFT is 50 % longer, and
// judges each replay against the recording. By default (llmtap replay --compare-to) the
// replay is judged as the proxy it went through measured it: that proxy records into a copy
// of the recording's folder (the proxy that recorded, recording on), where replay finds its
// requests by X-Request-Id, and the first line says both sides were measured at the proxy;
// the first replay is reproduced and the second is not, naming TTFT. llmtap report RECORDED
// --compare with the replay's records says the same, and with the replay's client-side export
// says the replay was measured at the client and claims no difference for the same mock.
//
// The load is sized so that the times measured are the mock's, not the machine's queue: at 100
// requests/s (each streaming ten events through mock, proxy and client, all under the race
// detector) a 2-core machine at load 13-21 saturated and the proxy measured a TTFT median of
// 842 ms for a configured 200 ms, recording and replay each at their own moment of the load, so
// the same mock came out "not reproduced" (TTFT p90 1377 vs 2315 ms) and the slower one
// "lower". At 30 requests/s the measured TTFT sits within a few ms of the configured one, the
// mock's 400 ms stays long against the stalls that remain, and the slower mock's 600 ms is 50 %
// more, over four margins away. 540 requests a side: the fewest at which no errors on either side
// bound the error rates' difference within its 2-point margin at the verdict's level (about
// z²/0.02 with z = 3.16); the 99th percentiles are not bounded at this size and are listed,
// not held against the verdict.
func TestReplayFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("records and replays 1,620 requests")
	}
	// Times long against a busy machine's stalls (tens of ms under the race detector), and a
	// rate that leaves the machine unsaturated (see above).
	base := mock.Config{Model: "fidelity-model", TTFT: 400 * time.Millisecond, ITL: 20 * time.Millisecond, OutputTokens: 8, Seed: 1}
	slower := base
	slower.TTFT = 600 * time.Millisecond
	const n, rate = 540, 30

	// The recording.
	_, mockURL := testkit.StartMock(t, base)
	recDir := filepath.Join(t.TempDir(), "recorded")
	site, stop := proxyRecording(t, recDir, mockURL)
	r := runBenchFull(t, "--url", "http://"+site, "--model", "fidelity-model", "--request-rate", fmt.Sprint(rate),
		"--arrival-pattern", "gamma", "--arrival-smoothness", "0.7", "--request-count", fmt.Sprint(n),
		"--isl", "64", "--osl", "8", "--random-seed", "5")
	if r.code != 0 {
		t.Fatalf("bench exit %d: %v\n%s", r.code, r.err, r.errOut)
	}
	stop()
	files, _ := filepath.Glob(filepath.Join(recDir, "records-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("record files %v, want one", files)
	}
	recorded, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name     string
		mock     mock.Config
		verdict  string
		diverged string
	}{
		{"same mock", base, "verdict: reproduced", ""},
		{"slower mock", slower, "verdict: not reproduced", "diverged most: ttft_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := testkit.StartMock(t, tc.mock)
			// The proxy records the replay into the recording's folder (a copy per case).
			dir := filepath.Join(t.TempDir(), "recorded")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			copied := filepath.Join(dir, filepath.Base(files[0]))
			if err := os.WriteFile(copied, recorded, 0o600); err != nil {
				t.Fatal(err)
			}
			site, stop := proxyRecording(t, dir, url)
			art := t.TempDir()
			code, out, _ := runReplayArgs(t, "--url", "http://"+site, "--artifact-dir", art, "--compare-to", dir, files[0])
			stop()
			if code != 0 {
				t.Fatalf("replay exit %d:\n%s", code, out)
			}
			t.Logf("replay --compare-to (the default):\n%s", out[strings.Index(out, "fidelity of"):])
			if !strings.Contains(out, "both sides measured at the proxy (replay: the replay's 540 of 540 requests as the llmtap proxy it went through recorded them, found by request id)") {
				t.Errorf("replay --compare-to does not compare both sides as the proxy measured them")
			}
			if v := verdictLine(t, out); !strings.HasPrefix(v, tc.verdict) || !strings.Contains(v, tc.diverged) {
				t.Errorf("replay --compare-to: %s, want %s (%s)", v, tc.verdict, tc.diverged)
			}

			all, _ := filepath.Glob(filepath.Join(dir, "records-*.jsonl"))
			var replayed string
			for _, f := range all {
				if f != copied {
					replayed = f
				}
			}
			if len(all) != 2 || replayed == "" {
				t.Fatalf("record files %v, want the recording's copy and the replay's", all)
			}
			code, out = runReportArgs(t, files[0], "--compare", replayed, "-o", filepath.Join(t.TempDir(), "r.html"))
			if code != 0 {
				t.Fatalf("report exit %d:\n%s", code, out)
			}
			t.Logf("report --compare (proxy on both sides):\n%s", out[strings.Index(out, "fidelity of"):])
			if !strings.Contains(out, "both sides measured at the proxy") {
				t.Errorf("report --compare does not say both sides were measured at the proxy")
			}
			v := verdictLine(t, out)
			if !strings.HasPrefix(v, tc.verdict) || !strings.Contains(v, tc.diverged) {
				t.Errorf("report --compare: %s, want %s (%s)", v, tc.verdict, tc.diverged)
			}

			// The replay's client-side export: measured at the client, said so. Its times also
			// hold the test process's own scheduling (the race detector, other packages on the
			// same two cores), which can widen its tails past a margin: for the same mock it
			// must not claim a difference (reproduced, or not enough requests to say).
			code, out = runReportArgs(t, files[0], "--compare", art, "-o", filepath.Join(t.TempDir(), "r.html"))
			if code != 0 {
				t.Fatalf("report exit %d:\n%s", code, out)
			}
			if !strings.Contains(out, "recording measured at the proxy, replay at the client") {
				t.Errorf("report --compare with the client's export does not say where each side was measured")
			}
			v = verdictLine(t, out)
			switch {
			case tc.verdict == "verdict: reproduced" && strings.HasPrefix(v, "verdict: not reproduced"):
				t.Errorf("client side: %s for the same mock", v)
			case tc.verdict != "verdict: reproduced" && (!strings.HasPrefix(v, tc.verdict) || !strings.Contains(v, tc.diverged)):
				t.Errorf("client side: %s, want %s (%s)", v, tc.verdict, tc.diverged)
			}
		})
	}
}

// TestReplayFidelityPrefixReuse: prefix reuse is compared from the recorder's trace files,
// whose block ids are derived from the prompts' content. A Mooncake trace whose requests share
// prefixes in groups (six blocks of eight shared by ten requests) is sent through one recording
// proxy; the trace that proxy recorded is replayed through a second, and the recorded records
// (which hold no block ids: each replayed prompt is fresh) through a third. The replay of the
// trace reuses prefixes as the recording did; the replay of the records does not, and the
// verdict says so. The prefix margin is raised to 0.15 for 960 blocks a side (the default 0.05
// needs about 4,000).
func TestReplayFidelityPrefixReuse(t *testing.T) {
	t.Setenv("LLMTAP_FLEET_KEY", "6c6c6d7461702d666c6565742d6b65792d7465737421")
	cfg := mock.Config{Model: "prefix-model", TTFT: 5 * time.Millisecond, ITL: time.Millisecond, OutputTokens: 4, Usage: mock.UsageAlways, Seed: 2}
	_, url := testkit.StartMock(t, cfg)
	var src strings.Builder
	for i := range 120 {
		g := i / 10
		ids := []string{}
		for b := range 6 {
			ids = append(ids, fmt.Sprint(g*100+b))
		}
		ids = append(ids, fmt.Sprint(10_000+2*i), fmt.Sprint(10_001+2*i))
		fmt.Fprintf(&src, `{"timestamp": %d, "input_length": 4096, "output_length": 4, "hash_ids": [%s]}`+"\n", 20*i, strings.Join(ids, ", "))
	}
	trace := filepath.Join(t.TempDir(), "shared.jsonl")
	if err := os.WriteFile(trace, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// replayThrough replays file through a new recording proxy and returns the recording folder.
	replayThrough := func(name, file string) string {
		dir := filepath.Join(t.TempDir(), name)
		site, stop := proxyRecording(t, dir, url)
		code, out, _ := runReplayArgs(t, "--url", "http://"+site, "--model", "prefix-model", "--artifact-dir", t.TempDir(), file)
		stop()
		if code != 0 {
			t.Fatalf("replay of %s: exit %d\n%s", file, code, out)
		}
		return dir
	}
	one := func(dir, pattern string) string {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(files) != 1 {
			t.Fatalf("%s in %s: %v, want one file", pattern, dir, files)
		}
		return files[0]
	}
	recorded := replayThrough("recorded", trace)
	fromTrace := replayThrough("from-trace", one(recorded, "trace-*.jsonl"))
	fromRecords := replayThrough("from-records", one(recorded, "records-*.jsonl"))
	for _, tc := range []struct {
		dir, want string
	}{{fromTrace, "same"}, {fromRecords, "lower"}} {
		code, out := runReportArgs(t, recorded, "--compare", tc.dir, "--prefix-margin", "0.15",
			"--compare-traces", one(recorded, "trace-*.jsonl")+","+one(tc.dir, "trace-*.jsonl"), "-o", filepath.Join(t.TempDir(), "r.html"))
		if code != 0 {
			t.Fatalf("report exit %d:\n%s", code, out)
		}
		var row []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "prefix_reuse" {
				row = f
			}
		}
		if len(row) == 0 || row[len(row)-1] != tc.want {
			t.Errorf("%s: prefix_reuse row %q, want %s\n%s", filepath.Base(tc.dir), row, tc.want, out)
		} else if rec, _ := strconv.ParseFloat(row[1], 64); rec < 0.5 {
			t.Errorf("the recording reuses %v of its blocks, the trace sent 0.675", rec)
		}
		if tc.want == "lower" && !strings.Contains(out, "verdict: not reproduced") {
			t.Errorf("a replay that lost the prefix sharing is not judged not reproduced:\n%s", out)
		}
		t.Logf("%s:\n%s", filepath.Base(tc.dir), out[strings.Index(out, "fidelity of"):])
	}
}
