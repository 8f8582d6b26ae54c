package privatefile

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWriteToDevice: an output that is not a regular file (-o /dev/null, which the
// merge measurements of docs/fleet.md use, or a named pipe) is written as it is; a temporary
// file beside it would land in /dev, fill it, and be renamed over the device (it replaced
// /dev/null with a regular file on this machine). Checked on a named pipe, not on /dev/null.
func TestWriteToDevice(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opens the reading end, reads until the writer closes
		got <- string(b)
	}()
	if err := Write(fifo, func(w io.Writer) error { _, err := io.WriteString(w, "rows\n"); return err }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "rows\n" {
			t.Errorf("the pipe's reader got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing reached the pipe's reader")
	}
	if st, err := os.Stat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the output is no longer a named pipe: %v %v", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(fifo), ".out.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left beside the output: %v", left)
	}
}
