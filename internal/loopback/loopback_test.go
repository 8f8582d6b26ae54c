package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeAddrIsBindableLoopbackOutsideEphemeralRange(t *testing.T) {
	for range 20 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(addr)
		if host != "127.0.0.1" || port < "20000" || port >= "32000" || len(port) != 5 {
			t.Fatalf("address %s, want 127.0.0.1 with a port in [20000, 32000)", addr)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("the address it returned cannot be bound: %v", err)
		}
		ln.Close()
	}
}

// TestFreeAddrNeverRepeats checks that one process is never handed the same port twice, and
// that a port reserved by this process is refused to a second reservation.
func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("%s handed out twice", addr)
		}
		seen[addr] = true
	}
	for addr := range seen {
		_, port, _ := net.SplitHostPort(addr)
		n, _ := strconv.Atoi(port)
		if reserve(n) {
			t.Fatalf("port %d reserved a second time while this process holds it", n)
		}
		break
	}
}
