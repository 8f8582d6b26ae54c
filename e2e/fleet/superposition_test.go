// Package fleet holds tests that run more than one llmtap process at once: each instance is a
// child process (this test binary re-executed with a Caddy config), so nothing process-wide in
// Caddy or llmtap is shared between them, as between the replicas of a real deployment.
package fleet

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap/caddyfile" // registers the llmtap directive and global option
	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
)

// childEnv names the Caddy config (JSON) a re-executed test binary loads instead of running
// the tests.
const childEnv = "LLMTAP_FLEET_CHILD_CONFIG"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(runChild(path))
	}
	os.Exit(m.Run())
}

// runChild is one llmtap instance: it loads the config and serves until its stdin closes (the
// parent closes it to stop the instance, and a parent that dies closes it too).
func runChild(path string) int {
	cfg, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := testkit.LoadConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = caddy.Stop()
	return 0
}

// instance is a running child process.
type instance struct {
	admin string // http://host:port
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startInstance starts a child that loads the Caddyfile (adapted here, so a config error names
// the test) and returns it once its admin API answers.
func startInstance(t *testing.T, caddyfile string) *instance {
	t.Helper()
	cfg, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(caddyfile), map[string]any{"filename": t.Name()})
	if err != nil {
		t.Fatalf("adapting:\n%s\n%v", caddyfile, err)
	}
	var probe struct {
		Admin struct {
			Listen string `json:"listen"`
		} `json:"admin"`
	}
	if err := json.Unmarshal(cfg, &probe); err != nil || probe.Admin.Listen == "" {
		t.Fatalf("the config names no admin listener: %v\n%s", err, cfg)
	}
	path := filepath.Join(t.TempDir(), "caddy.json")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{admin: "http://" + probe.Admin.Listen, cmd: cmd, stdin: stdin}
	t.Cleanup(in.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(in.admin + "/config/")
		if err == nil {
			resp.Body.Close()
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance with admin %s did not answer within 30 s: %v", in.admin, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop closes the child's stdin and waits for it, killing it after 10 s.
func (in *instance) stop() {
	_ = in.stdin.Close()
	done := make(chan struct{})
	go func() { _ = in.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = in.cmd.Process.Kill()
		<-done
	}
}

// shadowLoad is the part of GET /llmtap/shadow this test reads.
type shadowLoad struct {
	State    string  `json:"state"`
	Draining bool    `json:"draining"`
	InFlight int64   `json:"in_flight"`
	Sent     int64   `json:"sent"`
	OK       int64   `json:"ok"`
	Errors   int64   `json:"errors"`
	Dropped  int64   `json:"dropped"`
	LagP50Ms float64 `json:"lag_p50_ms"`
	LagP99Ms float64 `json:"lag_p99_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
}

func (in *instance) shadow(t *testing.T) shadowLoad {
	t.Helper()
	resp, err := http.Get(in.admin + "/llmtap/shadow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		Shadows []shadowLoad `json:"shadows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || len(st.Shadows) != 1 {
		t.Fatalf("GET /llmtap/shadow: %v (%d loads, want 1)", err, len(st.Shadows))
	}
	return st.Shadows[0]
}

// TestShadowSuperposition checks examples/scale-out.md's claim at the server: a shadow load of
// rate λ split over N instances (`share N`: each sends λ/N, its arrivals salted per process)
// arrives at the model server as one Poisson process of rate λ. Three llmtap processes with
// the same shadow config (rate 240, share 3, the default seed) each send 80 requests/s
// straight to one mock for 45 s; the mock's arrival log (its own clock, on arrival) must show
// rate 240/s within 3 % and, over the time all three were sending, an inter-arrival CV within
// 5 % of 1 and 100 ms counts whose variance equals their mean (for ~10,000 arrivals the
// standard errors are 1 %, 1.4 % and 0.07) when the machine did not hold the generators back.
// No request fails; a machine that held the generators back may make an instance drop up to
// 1 % of its arrivals at max_in_flight (counted toward the schedule's rate), one that did not
// none.
func TestShadowSuperposition(t *testing.T) {
	const (
		instances = 3
		lambda    = 240.0 // requests per second, all instances together
		dur       = 45 * time.Second
		edge      = 2 * time.Second // trimmed at each end: the instances start one after another
	)
	mock, err := mock.New(mock.Config{TTFT: time.Millisecond, ITL: 0, OutputTokens: 2, LogLimit: 20000})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mock}
	go srv.Serve(ln)
	t.Cleanup(func() { _ = srv.Close() })
	upstream := "http://" + ln.Addr().String()

	var fleet []*instance
	for i := range instances {
		fleet = append(fleet, startInstance(t, fmt.Sprintf(`{
	admin %s
	llmtap {
		shadow s%d {
			url %s/v1/chat/completions
			model m
			rate %v
			share %d
			arrival poisson
			isl 8
			osl 2
			max_in_flight 256
			duration %v
		}
	}
}
`, testkit.FreeAddr(t), i, upstream, lambda, instances, dur)))
	}

	deadline := time.Now().Add(dur + 60*time.Second)
	loads := make([]shadowLoad, instances)
	for i, in := range fleet {
		for {
			loads[i] = in.shadow(t)
			s := loads[i]
			if s.State == "done" && !s.Draining && s.InFlight == 0 && s.OK+s.Errors == s.Sent {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance %d has not finished its load: %+v", i, s)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// A generator held back by a busy machine (the race detector, other test packages on the
	// same cores) sends what it owes at once; its responses then come back late too, and an
	// arrival that finds max_in_flight requests still open is dropped, as the load's own rule
	// says. The instances' schedule lag tells whether that happened: it is well inside the
	// mean gap of the superposed process on a machine that keeps up.
	worst := 0.0
	for _, s := range loads {
		worst = max(worst, s.LagP99Ms)
	}
	gap := 1000 / lambda // the superposed process's mean gap, ms
	heldBack := worst > gap/2
	var sent, dropped int64
	for i, s := range loads {
		t.Logf("instance %d: sent %d, ok %d, errors %d, dropped %d, schedule lag p50 %.2f ms p99 %.2f ms max %.2f ms", i, s.Sent, s.OK, s.Errors, s.Dropped, s.LagP50Ms, s.LagP99Ms, s.LagMaxMs)
		if s.Errors != 0 {
			t.Errorf("instance %d: %d errors", i, s.Errors)
		}
		// Drops only when the machine held the generators back, and then at most 1 %.
		if s.Dropped != 0 && (!heldBack || float64(s.Dropped) > 0.01*float64(s.Sent+s.Dropped)) {
			t.Errorf("instance %d: %d dropped of %d scheduled (schedule lag p99 of the slowest instance %.2f ms)", i, s.Dropped, s.Sent+s.Dropped, worst)
		}
		sent += s.Sent
		dropped += s.Dropped
	}
	arr := mock.Arrivals()
	if int64(len(arr)) != sent {
		t.Fatalf("the mock saw %d requests, the instances sent %d", len(arr), sent)
	}
	// The window in which all three were sending: the instances start within a second or two
	// of one another and each sends for dur.
	from, to := arr[0].Add(edge), arr[len(arr)-1].Add(-edge)
	var window []time.Time
	for _, at := range arr {
		if !at.Before(from) && !at.After(to) {
			window = append(window, at)
		}
	}
	span := to.Sub(from).Seconds()
	// The rate: every instance sends its whole schedule of dur (the loads ran to "done" and
	// the mock saw every request), so the count over dur is the superposed process's, however
	// late a busy machine sent some of them. Its standard error is 1 % at ~10,800 arrivals.
	// A dropped arrival was scheduled and not sent: it counts toward the schedule's rate.
	rate := float64(int64(len(arr))+dropped) / dur.Seconds()
	cv := gapCV(window)
	t.Logf("%d arrivals at the mock and %d dropped over the %v schedule: rate %.2f/s (λ = %v); %d in the %.1f s overlap window, inter-arrival CV %.4f",
		len(arr), dropped, dur, rate, lambda, len(window), span, cv)
	if len(window) < 8000 {
		t.Fatalf("only %d arrivals in the window: the instances did not overlap for long", len(window))
	}
	if math.Abs(rate-lambda)/lambda > 0.03 {
		t.Errorf("superposed rate %.2f/s at the mock, want %v within 3 %%", rate, lambda)
	}
	// The shape at the mock: a held-back generator bunches arrivals whatever the process, so
	// the shape is judged when the schedule lag stayed well inside the mean gap:
	//   - the counts in 100 ms bins, whose variance equals their mean for a Poisson process
	//     (index of dispersion 1; with ~400 bins its standard error is about 0.07);
	//   - the gaps themselves: CV 1 within 5 %.
	d := dispersion(window, from, 100*time.Millisecond)
	if heldBack {
		t.Logf("the machine held the generators back (schedule lag p99 %.2f ms against a mean gap of %.2f ms): the shape at the mock (dispersion %.3f, CV %.4f) is not judged in this run; the rate is", worst, gap, d, cv)
		return
	}
	if d < 0.8 || d > 1.2 {
		t.Errorf("index of dispersion of the 100 ms counts %.3f, want 1 within 0.2 (a Poisson process)", d)
	}
	if math.Abs(cv-1) > 0.05 {
		t.Errorf("superposed inter-arrival CV %.4f at the mock, want 1 within 5 %% (a Poisson process)", cv)
	}
}

// dispersion returns the variance-to-mean ratio of the counts of ts in consecutive bins of
// width w from start (the last, partial bin left out).
func dispersion(ts []time.Time, start time.Time, w time.Duration) float64 {
	n := int(ts[len(ts)-1].Sub(start) / w)
	if n < 2 {
		return 0
	}
	counts := make([]float64, n)
	for _, at := range ts {
		if i := int(at.Sub(start) / w); i >= 0 && i < n {
			counts[i]++
		}
	}
	var sum, sq float64
	for _, c := range counts {
		sum += c
		sq += c * c
	}
	mean := sum / float64(n)
	return (sq/float64(n) - mean*mean) / mean
}

// gapCV returns the coefficient of variation of the gaps between consecutive times.
func gapCV(ts []time.Time) float64 {
	if len(ts) < 3 {
		return 0
	}
	var sum, sq float64
	for i := 1; i < len(ts); i++ {
		g := ts[i].Sub(ts[i-1]).Seconds()
		sum += g
		sq += g * g
	}
	n := float64(len(ts) - 1)
	mean := sum / n
	return math.Sqrt(max(sq/n-mean*mean, 0)) / mean
}
