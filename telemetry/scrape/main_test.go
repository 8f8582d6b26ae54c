package scrape

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readFixture returns a page from testdata.
func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve starts a server on 127.0.0.1 that answers every request with h, and
// a client whose idle connections are closed with the server, so goleak
// sees no leftover connection goroutines.
func serve(t *testing.T, h http.HandlerFunc) (url string, client *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	client = srv.Client()
	t.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
	})
	return srv.URL + "/metrics", client
}

// servePage serves body as a text exposition page.
func servePage(t *testing.T, body []byte) (string, *http.Client) {
	return serve(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(body)
	})
}
