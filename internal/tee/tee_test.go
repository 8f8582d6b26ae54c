package tee

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestTeeKeepsWhatTheUpstreamWrote(t *testing.T) {
	tp := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("data: a\n\n"))
		http.NewResponseController(w).Flush()
		w.Write([]byte("data: b\n\n"))
	}))
	srv := httptest.NewServer(tp)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("X-Request-Id", "r1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sent, ok := tp.Wait("r1", 5*time.Second)
	if !ok || string(sent) != string(got) || string(got) != "data: a\n\ndata: b\n\n" {
		t.Fatalf("client got %q, tee kept %q (found %v)", got, sent, ok)
	}
	if _, ok := tp.Sent("nobody"); ok {
		t.Fatal("a request id that never came has an entry")
	}
}
