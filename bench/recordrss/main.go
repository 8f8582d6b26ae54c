// Command recordrss measures what the default recording (record with files records trace)
// costs in memory under long prompts: it starts `llmtap mock` and `llmtap run` with a record
// block, sends requests with prompts of -prompt bytes at -rate per second for -duration,
// samples the proxy's resident memory (VmRSS) every 100 ms, and at the end checks the
// accounting: every request answered is a trace row written or a record counted dropped
// (llmtap_recorder_dropped_total, llmtap_records_dropped_total).
//
//	go build -o bin/llmtap ./cmd/llmtap && go run ./bench/recordrss -llmtap bin/llmtap
//
// Every process listens on 127.0.0.1, the load is bounded by -duration, and the processes are
// stopped (by their own process id) before it exits.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("llmtap", "bin/llmtap", "the llmtap binary")
	promptBytes := flag.Int("prompt", 1<<20, "bytes of prompt text per request")
	rate := flag.Float64("rate", 40, "requests per second")
	duration := flag.Duration("duration", 40*time.Second, "how long to send")
	maxBody := flag.String("max-request-body", "2MiB", "the handler's max_request_body (the prompt is captured whole below it)")
	maxInFlight := flag.Int("max-in-flight", 64, "requests in flight at most; an arrival that finds this many is not sent (counted), so a slow machine measures the recording, not a pile of requests")
	flag.Parse()
	if err := run(*bin, *promptBytes, *rate, *duration, *maxBody, *maxInFlight); err != nil {
		fmt.Fprintln(os.Stderr, "recordrss:", err)
		os.Exit(1)
	}
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type proc struct{ cmd *exec.Cmd }

func start(bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &proc{cmd}, cmd.Start()
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func waitFor(addr string) error {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("%s did not listen within 60 s", addr)
}

// rssMiB reads VmRSS of pid.
func rssMiB(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// prompt returns n bytes of words drawn from a vocabulary of a few thousand, different for
// every request (a prompt cache would not help llmtap: each prompt is new text).
func prompt(rng *rand.Rand, words []string, n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func vocabulary(rng *rand.Rand) []string {
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	words := make([]string, 4000)
	for i := range words {
		n := 2 + rng.IntN(9)
		w := make([]byte, n)
		for j := range w {
			w[j] = letters[min(rng.IntN(len(letters)), rng.IntN(len(letters)))]
		}
		if rng.IntN(10) == 0 {
			w[0] -= 'a' - 'A'
		}
		words[i] = string(w)
	}
	return words
}

var metricLine = regexp.MustCompile(`^(llmtap_recorder_dropped_total|llmtap_records_dropped_total)\{reason="([a-z_]+)"\} ([0-9.e+]+)$`)

// drops reads the drop counters from the admin /metrics.
func drops(admin string) (map[string]float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := metricLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[3], 64)
			out[m[1]+"{"+m[2]+"}"] = v
		}
	}
	return out, sc.Err()
}

// traceRows counts the lines of the trace files in dir.
func traceRows(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "trace-*.jsonl"))
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += bytes.Count(b, []byte{'\n'})
	}
	return n
}

func run(bin string, promptBytes int, rate float64, duration time.Duration, maxBody string, maxInFlight int) error {
	dir, err := os.MkdirTemp("", "recordrss")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	upAddr, proxyAddr, adminAddr := freePort(), freePort(), freePort()
	mock, err := start(bin, "mock", "-listen", upAddr, "-lean-http", "-prompt-counter", "approx", "-itl", "1ms", "-output-tokens", "16")
	if err != nil {
		return err
	}
	defer mock.stop()
	cfg := fmt.Sprintf(`{
	admin %s
	auto_https off
}
http://%s {
	llmtap {
		max_request_body %s
		record %s
	}
	reverse_proxy %s
}
`, adminAddr, proxyAddr, maxBody, filepath.Join(dir, "rec"), upAddr)
	cfgPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	proxy, err := start(bin, "run", "--config", cfgPath, "--adapter", "caddyfile")
	if err != nil {
		return err
	}
	defer proxy.stop()
	if err := waitFor(upAddr); err != nil {
		return err
	}
	if err := waitFor(proxyAddr); err != nil {
		return err
	}
	pid := proxy.cmd.Process.Pid

	rng := rand.New(rand.NewPCG(7, 7))
	words := vocabulary(rng)
	client := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	send := func(p string) bool {
		body, _ := json.Marshal(map[string]any{
			"model": "m", "max_tokens": 16, "stream": true,
			"stream_options": map[string]any{"include_usage": true},
			"messages":       []map[string]string{{"role": "user", "content": p}},
		})
		resp, err := client.Post("http://"+proxyAddr+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	// Warm up with a few small requests, then take the idle figure.
	for range 5 {
		send("hello")
	}
	time.Sleep(3 * time.Second)
	idle := rssMiB(pid)
	// What the warm-up left (its trace rows, any drop) is subtracted from the final figures.
	rows0, dropped0 := traceRows(filepath.Join(dir, "rec")), 0.0
	if d0, err := drops(adminAddr); err == nil {
		for _, v := range d0 {
			dropped0 += v
		}
	}

	// Prompts are made ahead (a pool of 16, each sent as a new prompt by a varying prefix).
	pool := make([]string, 16)
	for i := range pool {
		pool[i] = prompt(rng, words, promptBytes)
	}
	var peak atomic.Uint64
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if v := uint64(rssMiB(pid)); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	var ok, failed, skipped atomic.Int64
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxInFlight)
	interval := time.Duration(float64(time.Second) / rate)
	t0 := time.Now()
	n := int(duration.Seconds() * rate)
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * interval)))
		p := fmt.Sprintf("%08d ", i) + pool[i%len(pool)][9:]
		select {
		case slots <- struct{}{}:
		default:
			skipped.Add(1)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if send(p) {
				ok.Add(1)
			} else {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	sendTime := time.Since(t0)
	// Let the recorder drain: every answered request is a trace row or a counted drop.
	var rows int
	var d map[string]float64
	var dropped float64
	for deadline := time.Now().Add(120 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		rows = traceRows(filepath.Join(dir, "rec")) - rows0
		if d, err = drops(adminAddr); err != nil {
			return err
		}
		dropped = -dropped0
		for _, v := range d {
			dropped += v
		}
		if float64(rows)+dropped >= float64(ok.Load()+failed.Load()) {
			break
		}
	}
	close(stopSampling)
	sampled.Wait()
	sent := ok.Load() + failed.Load()
	fmt.Printf("prompt %d B, rate %.0f/s for %v: %d sent (%d answered 200, %d failed), %d not sent (%d in flight), in %.1f s\n",
		promptBytes, rate, duration, sent, ok.Load(), failed.Load(), skipped.Load(), maxInFlight, sendTime.Seconds())
	fmt.Printf("RSS idle %.0f MiB, peak %d MiB: +%.0f MiB\n", idle, peak.Load(), float64(peak.Load())-idle)
	fmt.Printf("trace rows %d + counted drops %.0f = %.0f of %d sent %v\n", rows, dropped, float64(rows)+dropped, sent, d)
	if float64(rows)+dropped != float64(sent) {
		return fmt.Errorf("accounting: %d rows + %.0f drops != %d sent", rows, dropped, sent)
	}
	return nil
}
