package loopback

import (
	"net"
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
