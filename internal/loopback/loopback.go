// Package loopback finds free TCP addresses on 127.0.0.1 for servers that llmtap's commands and
// tests start and then hand to another component (Caddy) to listen on.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
)

// Ports are drawn below Linux's default ephemeral range (32768–60999): a port picked from the
// ephemeral range can be taken by any outgoing connection between the moment it is found free
// and the moment the server binds it, which busy concurrent tests do.
const (
	lowPort  = 20000
	highPort = 32000
)

// handed holds the ports this process was given, never handed out twice.
var handed sync.Map

// FreeAddr returns "127.0.0.1:port" for a port that was free when the call returned.
//
// The port is also reserved against other processes that call FreeAddr (parallel test
// binaries): Caddy binds its listeners with SO_REUSEPORT, so two Caddy processes that picked
// the same port would both bind it and the kernel would share the connections between them. A
// lock file per port, held until this process exits, keeps the picks apart (see reserve).
func FreeAddr() (string, error) {
	var last error
	for range 100 {
		port := lowPort + rand.IntN(highPort-lowPort)
		if _, taken := handed.LoadOrStore(port, true); taken {
			continue
		}
		if !reserve(port) {
			continue // another process holds it
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			last = err
			continue
		}
		ln.Close()
		return addr, nil
	}
	return "", fmt.Errorf("no free loopback port found in %d–%d: %w", lowPort, highPort, last)
}
