// Package loopback finds free TCP addresses on 127.0.0.1 for servers that llmtap's commands and
// tests start and then hand to another component (Caddy) to listen on.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
)

// Ports are drawn below Linux's default ephemeral range (32768–60999): a port picked from the
// ephemeral range can be taken by any outgoing connection between the moment it is found free
// and the moment the server binds it, which busy concurrent tests do.
const (
	lowPort  = 20000
	highPort = 32000
)

// FreeAddr returns "127.0.0.1:port" for a port that was free when the call returned.
func FreeAddr() (string, error) {
	var last error
	for range 50 {
		addr := fmt.Sprintf("127.0.0.1:%d", lowPort+rand.IntN(highPort-lowPort))
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
