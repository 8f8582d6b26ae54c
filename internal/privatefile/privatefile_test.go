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

// TestReplacesAWorldReadableFile: an output that already exists readable by everyone becomes
// private (0600) and holds only what was written, through Create (in place) and Write
// (through a temporary file renamed over it).
func TestReplacesAWorldReadableFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		write func(path string) error
	}{
		{"Create", func(path string) error {
			f, err := Create(path)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(f, "new\n"); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}},
		{"Write", func(path string) error {
			return Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err })
		}},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte("an older, longer content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
			t.Fatal(err)
		}
		if err := tc.write(path); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", tc.name, st.Mode().Perm())
		}
		if b, _ := os.ReadFile(path); string(b) != "new\n" {
			t.Errorf("%s: the file holds %q, want %q", tc.name, b, "new\n")
		}
	}
}
