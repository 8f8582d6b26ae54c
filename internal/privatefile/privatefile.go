// Package privatefile writes output files that only their owner may read (mode 0600): traces,
// records, exports and merges hold prompts, answers and model names not for everyone.
package privatefile

import (
	"io"
	"os"
	"path/filepath"
)

// Create creates (or truncates) the file path, readable by its owner only, for writing in
// place.
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	// An existing file keeps its mode through O_TRUNC; make sure it is private.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

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
