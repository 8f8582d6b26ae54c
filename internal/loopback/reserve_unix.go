//go:build unix

package loopback

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// held keeps the reservation files open for the life of the process.
var (
	heldMu sync.Mutex
	held   []*os.File
)

// reserve takes an exclusive lock on a file named after the port in the temporary folder and
// keeps it open, so the lock lasts until this process exits (the kernel releases it then, even
// on a crash). It reports false when another process holds the lock. When the lock cannot be
// taken for another reason (no writable temporary folder) it reports true: the bind check
// still runs.
func reserve(port int) bool {
	dir := filepath.Join(os.TempDir(), "llmtap-loopback-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprint(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return err != syscall.EWOULDBLOCK
	}
	heldMu.Lock()
	held = append(held, f) // kept open: closing it would release the lock
	heldMu.Unlock()
	return true
}
