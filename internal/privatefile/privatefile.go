// Package privatefile writes output files that only their owner may read (mode 0600), whole
// or not at all: traces, records and merges hold prompts and answers.
package privatefile

import (
	"io"
	"os"
	"path/filepath"
)

// Write writes a file through a temporary file in the same folder, renamed into place
// when complete: the result has mode 0600 even when it replaces an existing file, and a failed
// conversion leaves no half-written trace behind.
func Write(path string, write func(io.Writer) error) (err error) {
	// A device or a pipe (-o /dev/null, a named pipe) is written as it is: a temporary file
	// beside it would land in /dev and be renamed over the device.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return err
	}
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
