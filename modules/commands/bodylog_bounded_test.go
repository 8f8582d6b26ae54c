package commands

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyLogIsBounded checks that the body log keeps at most Max requests and MaxBody bytes
// of each body, while the handler still reads the whole request and the client the whole
// response.
func TestBodyLogIsBounded(t *testing.T) {
	var got []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
		w.Write([]byte("response-" + string(b)))
	})
	log := &BodyLog{Next: next, Max: 2, MaxBody: 4}
	for _, body := range []string{"abcdef", "gh", "ijkl"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("X-Correlation-Id", "s1")
		log.ServeHTTP(rec, req)
		if rec.Body.String() != "response-"+body {
			t.Errorf("the client got %q", rec.Body.String())
		}
	}
	if strings.Join(got, ",") != "abcdef,gh,ijkl" {
		t.Errorf("the handler read %q: the log must not cut what it passes on", got)
	}
	es := log.Entries()
	if len(es) != 2 || log.Dropped() != 1 {
		t.Fatalf("%d entries, %d dropped; want 2 and 1", len(es), log.Dropped())
	}
	if !bytes.Equal(es[0].Body, []byte("abcd")) || !bytes.Equal(es[0].Response, []byte("resp")) || es[0].CorrelationID != "s1" || es[0].LastWrite.IsZero() {
		t.Errorf("entry %+v: want the first 4 bytes of each body, the correlation id and the last write", es[0])
	}
}
