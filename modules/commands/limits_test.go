package commands

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// benchErr runs `llmtap bench` in-process and returns its exit code and error (with stderr).
func benchErr(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(&errOut)
	code, err := benchMain(context.Background(), &out, &errOut, false, fs, args, nil)
	msg := errOut.String()
	if err != nil {
		msg += err.Error()
	}
	return code, msg
}

// TestBenchNumbersBounded: --concurrency past limits.MaxConcurrency (1e9 with three requests
// spun a core and ignored SIGTERM), --warmup-concurrency past it, --isl past limits.MaxTokens
// (1e12 died out of memory) and --num-dataset-entries × --isl past limits.MaxPoolTokens (1e8
// took 5.8 GB) are refused before anything is built or sent, each naming its limit.
func TestBenchNumbersBounded(t *testing.T) {
	t.Parallel()
	base := []string{"--model", "m", "--url", "http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "1000000000", "--request-count", "3"}, "limits.MaxConcurrency"},
		{[]string{"--concurrency", "1,1000000"}, "limits.MaxConcurrency"},
		{[]string{"--concurrency", "1", "--warmup-concurrency", "1000000", "--warmup-request-count", "1"}, "limits.MaxConcurrency"},
		{[]string{"--concurrency", "1", "--isl", "1e12"}, "limits.MaxTokens"},
		{[]string{"--concurrency", "1", "--isl", "1e8"}, "limits.MaxTokens"},
		{[]string{"--concurrency", "1", "--seq-dist", "1e9,10:1"}, "limits.MaxTokens"},
		{[]string{"--concurrency", "1", "--isl", "2000000", "--request-count", "100"}, "limits.MaxPoolTokens"},
	} {
		code, msg := benchErr(t, append(append([]string{}, base...), c.args...)...)
		if code == 0 || !strings.Contains(msg, c.want) {
			t.Errorf("bench %v: exit %d, %q; want an error naming %s", c.args, code, msg, c.want)
		}
	}
}

// TestExitAfterSignal: after SIGTERM a command that does not return is ended (143) once its
// grace is over; a second signal ends it at once (130 for SIGINT); a command that returned
// first is not ended; without grace the first signal ends it.
func TestExitAfterSignal(t *testing.T) {
	t.Parallel()
	wait := func(got *atomic.Int32) int32 {
		for range 500 {
			if v := got.Load(); v != 0 {
				return v
			}
			time.Sleep(10 * time.Millisecond)
		}
		return 0
	}
	var out bytes.Buffer
	run := func(grace time.Duration, sigs ...os.Signal) (*atomic.Int32, func()) {
		var got atomic.Int32
		ch := make(chan os.Signal, 2)
		stop := exitAfterSignal("x", ch, grace, &out, func(code int) { got.Store(int32(code)) })
		for _, s := range sigs {
			ch <- s
		}
		return &got, stop
	}
	got, stop := run(10*time.Millisecond, syscall.SIGTERM)
	if c := wait(got); c != 143 {
		t.Errorf("SIGTERM, no return: exit %d, want 143", c)
	}
	stop()
	got, stop = run(time.Hour, os.Interrupt, os.Interrupt)
	if c := wait(got); c != 130 {
		t.Errorf("two SIGINTs: exit %d, want 130 at once", c)
	}
	stop()
	got, stop = run(0, os.Interrupt)
	if c := wait(got); c != 130 {
		t.Errorf("no grace: exit %d, want 130", c)
	}
	stop()
	var never atomic.Int32
	ch := make(chan os.Signal, 1)
	stop = exitAfterSignal("x", ch, 10*time.Millisecond, &out, func(code int) { never.Store(int32(code)) })
	stop()
	ch <- syscall.SIGTERM
	time.Sleep(50 * time.Millisecond)
	if never.Load() != 0 {
		t.Error("a command that had returned was ended")
	}
}
