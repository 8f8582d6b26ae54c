package meter

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestUpstreamTrace sends two requests over one keep-alive connection through a real HTTP
// client: the first dials (Connect > 0), the second reuses the connection (Connect 0), and in
// both the moments come in the order the exchange makes them.
func TestUpstreamTrace(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	client := srv.Client()
	for i, wantDial := range []bool{true, false} {
		var u UpstreamTrace
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := client.Do(u.Request(req, time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		var m Meter
		u.Hand(&m)
		up := m.up
		if (up.Connect > 0) != wantDial {
			t.Errorf("request %d: connect %v, want dialing %v", i, up.Connect, wantDial)
		}
		if !(0 < up.GotConn && up.GotConn <= up.Wrote && up.Wrote <= up.FirstByte) {
			t.Errorf("request %d: got conn %v, wrote %v, first byte %v: want 0 < got conn ≤ wrote ≤ first byte", i, up.GotConn, up.Wrote, up.FirstByte)
		}
	}
}
