package h1client

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkRoundTrip compares this transport with net/http's on the same loopback server in the
// same process: small POSTs from 4 concurrent senders per P, the load generator's pattern. Run it
// with -cpu 1: then ns/op is the CPU time of one exchange, client and server together (with
// more Ps it is wall time, which hides how much CPU each side burns); compare the two in one run.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}],"usage":{"completion_tokens":1}}`)
	}))
	defer srv.Close()
	body := `{"model":"m","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}`
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"net-http", &http.Transport{MaxIdleConnsPerHost: 1000}},
		{"h1client", &Transport{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetParallelism(4)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
					resp, err := tc.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
		if ci, ok := tc.rt.(interface{ CloseIdleConnections() }); ok {
			ci.CloseIdleConnections()
		}
	}
}
