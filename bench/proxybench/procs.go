package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// upstream is one mock inference server process, configured for one kind of scenario: the
// mock's delays are per server, not per request, so each timing profile gets its own process.
type upstream struct {
	name string
	addr string
	args []string
}

// proc is a child process the bench owns: started by start, stopped (and waited for) by stop.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// start runs bin with args, its stderr kept in memory for error messages, in its own process
// group so that stop reaches it and nothing else.
func start(name, bin string, args []string, env []string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	return &proc{name: name, cmd: cmd, log: log}, nil
}

// stop sends SIGTERM, waits up to five seconds, then kills.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// waitListening polls addr until it accepts a TCP connection, the process exits, or the timeout
// passes.
func waitListening(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if p.cmd.ProcessState != nil || syscall.Kill(p.pid(), 0) != nil {
			return fmt.Errorf("%s exited: %s", p.name, p.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not listen on %s within %v: %s", p.name, addr, timeout, p.log.String())
}

// startMock starts `llmtap mock` for one upstream.
func startMock(bin string, u upstream) (*proc, error) {
	args := append([]string{"mock", "--listen", u.addr}, u.args...)
	p, err := start("mock "+u.name, bin, args, nil)
	if err != nil {
		return nil, err
	}
	if err := waitListening(p, u.addr, 10*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// proxy is one Caddy process under test: the same binary for every variant, told by its
// Caddyfile whether llmtap measures.
type proxy struct {
	variant variant
	*proc
	admin string
	// addrs maps an upstream's name to the proxy's listener in front of it.
	addrs map[string]string
}

// caddyfile writes the config of one proxy variant: one site per upstream, each a plain
// reverse_proxy preceded by the variant's snippet (nothing for plain Caddy, the llmtap
// directive when measuring). Logs stay at WARN and nothing is persisted, so the processes do
// the same work apart from the handler under test. {dir} in a snippet is replaced by a folder
// of the variant's own, for recordings.
func caddyfile(v variant, dir, admin string, sites map[string]string, ups []upstream) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n\tadmin %s\n\tauto_https off\n\tpersist_config off\n\tlog default {\n\t\tlevel WARN\n\t}\n", admin)
	if v.global != "" {
		g := v.global
		for name, addr := range sites {
			g = strings.ReplaceAll(g, "{site:"+name+"}", addr)
		}
		b.WriteString("\t" + g + "\n")
	}
	b.WriteString("}\n")
	for _, u := range ups {
		fmt.Fprintf(&b, "\nhttp://%s {\n", sites[u.name])
		if v.snippet != "" {
			b.WriteString("\t" + strings.ReplaceAll(v.snippet, "{dir}", dir) + "\n")
		}
		// Keep enough idle upstream connections for the highest concurrency, as a tuned
		// deployment would; Caddy's default (32 per host) would make both variants churn
		// connections at 256 streams and measure dialing instead of proxying.
		fmt.Fprintf(&b, "\treverse_proxy %s {\n\t\ttransport http {\n\t\t\tkeepalive_idle_conns_per_host 4096\n\t\t}\n\t}\n}\n", u.addr)
	}
	return b.String()
}

// startProxy writes the variant's Caddyfile into dir and starts `llmtap run` on it.
func startProxy(bin, dir string, v variant, adminPort, basePort int, ups []upstream) (*proxy, error) {
	admin := fmt.Sprintf("127.0.0.1:%d", adminPort)
	sites := make(map[string]string, len(ups))
	for i, u := range ups {
		sites[u.name] = fmt.Sprintf("127.0.0.1:%d", basePort+i)
	}
	vdir := filepath.Join(dir, v.name)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(vdir, "Caddyfile")
	if err := os.WriteFile(cfg, []byte(caddyfile(v, vdir, admin, sites, ups)), 0o644); err != nil {
		return nil, err
	}
	home := filepath.Join(vdir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	// Caddy keeps its storage and autosave under $HOME and the XDG folders: point them into the
	// bench's temporary folder.
	env := []string{"HOME=" + home, "XDG_DATA_HOME=" + home, "XDG_CONFIG_HOME=" + home}
	p, err := start("proxy "+v.name, bin, []string{"run", "--adapter", "caddyfile", "--config", cfg}, env)
	if err != nil {
		return nil, err
	}
	for _, u := range ups {
		if err := waitListening(p, sites[u.name], 15*time.Second); err != nil {
			p.stop()
			return nil, err
		}
	}
	return &proxy{variant: v, proc: p, admin: admin, addrs: sites}, nil
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user plus system CPU time the process has used, from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// Fields after the name start at field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(ut+st) / clockTicks, nil
}

// syscalls is the number of read and write system calls the process has made (syscr + syscw in
// /proc/<pid>/io): how many times the proxy touched a socket, which a wrapped writer could
// change without costing any CPU of its own.
func syscalls(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "syscr" && k != "syscw") {
			continue
		}
		c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc io %s: %w", k, err)
		}
		n += c
	}
	return n, nil
}

// rssBytes is the process's resident set size, from VmRSS in /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// memStats is what the proxy's Go runtime says it holds, from expvar on Caddy's admin listener.
type memStats struct {
	HeapInuse  int64
	StackInuse int64
}

// collectGarbage makes the proxy run a full garbage collection (the heap profile endpoint does
// one when asked with gc=1) and returns its runtime memory figures afterwards, so that memory
// deltas compare live data rather than how far each process's heap had drifted since its last
// collection.
func collectGarbage(ctx context.Context, admin string) (memStats, error) {
	var ms memStats
	if err := adminGet(ctx, admin, "/debug/pprof/heap?gc=1", io.Discard); err != nil {
		return ms, err
	}
	var buf bytes.Buffer
	if err := adminGet(ctx, admin, "/debug/vars", &buf); err != nil {
		return ms, err
	}
	var v struct{ Memstats memStats }
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		return ms, fmt.Errorf("decoding /debug/vars: %w", err)
	}
	return v.Memstats, nil
}

// adminGet fetches path from Caddy's admin listener into w.
func adminGet(ctx context.Context, admin, path string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+path, nil)
	if err != nil {
		return err
	}
	// Caddy's admin endpoint checks the Host header against its listener.
	req.Host = admin
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
