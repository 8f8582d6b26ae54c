//go:build !unix

package loopback

// reserve is a no-op where file locks are not available: the bind check alone picks the port.
func reserve(int) bool { return true }
