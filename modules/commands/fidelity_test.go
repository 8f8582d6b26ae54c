package commands

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"

	"github.com/llmtap/llmtap/shadow/mockllm"
)

// proxyRecording starts real Caddy with llmtap recording to dir in front of upstream and
// returns the site's address and a stop function (stopping flushes the recorder).
func proxyRecording(t *testing.T, dir, upstream string) (string, func()) {
	t.Helper()
	admin, site := freeAddr(t), freeAddr(t)
	cf := fmt.Sprintf(surfacesCaddyfile, admin, "", site, dir, strings.TrimPrefix(upstream, "http://"))
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(cf), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := caddy.Load(cfg, true); err != nil {
		t.Fatal(err)
	}
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
	return site, stop
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
// with llmtap's recorder in front of the mock, then replays the recording through the proxy
// against the same mock configuration and against one whose TTFT is 50 % longer, and judges
// each replay against the recording: with the proxy's records on both sides (llmtap report
// RECORDED --compare REPLAYED) the first is reproduced and the second is not, naming TTFT; the
// replay's own client-side export (llmtap replay --compare-to) is reproduced too, within the
// absolute margin that allows for the hop through the proxy. 900 requests: the fewest at which
// a 99th percentile can be bounded at the verdict's level, with room.
func TestReplayFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("records and replays 2,700 requests")
	}
	// Times long against a busy machine's stalls (tens of ms under the race detector).
	base := mockllm.Config{Model: "fidelity-model", TTFT: 200 * time.Millisecond, ITL: 20 * time.Millisecond, OutputTokens: 8, Seed: 1}
	slower := base
	slower.TTFT = 300 * time.Millisecond
	const n = 900

	// The recording.
	_, mockURL := startMock(t, base)
	recDir := filepath.Join(t.TempDir(), "recorded")
	site, stop := proxyRecording(t, recDir, mockURL)
	r := runBenchFull(t, "--url", "http://"+site, "--model", "fidelity-model", "--request-rate", "100",
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

	for _, tc := range []struct {
		name     string
		mock     mockllm.Config
		verdict  string
		diverged string
	}{
		{"same mock", base, "verdict: reproduced", ""},
		{"slower mock", slower, "verdict: not reproduced", "diverged most: ttft_ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := startMock(t, tc.mock)
			repDir := filepath.Join(t.TempDir(), "replayed")
			site, stop := proxyRecording(t, repDir, url)
			art := t.TempDir()
			code, out, _ := runReplayArgs(t, "--url", "http://"+site, "--artifact-dir", art, "--compare-to", recDir, files[0])
			stop()
			if code != 0 {
				t.Fatalf("replay exit %d:\n%s", code, out)
			}
			t.Logf("replay --compare-to (client side):\n%s", out[strings.Index(out, "fidelity of"):])
			if !strings.Contains(out, "recording measured at the proxy, replay at the client") {
				t.Errorf("replay --compare-to does not say where each side was measured")
			}
			if v := verdictLine(t, out); !strings.HasPrefix(v, tc.verdict) || !strings.Contains(v, tc.diverged) {
				t.Errorf("replay --compare-to: %s, want %s (%s)", v, tc.verdict, tc.diverged)
			}

			code, out = runReportArgs(t, recDir, "--compare", repDir, "-o", filepath.Join(t.TempDir(), "r.html"))
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
		})
	}
}
