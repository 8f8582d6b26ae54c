package scrape

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParsePage(t *testing.T) {
	tests := []struct {
		name    string
		page    string
		max     int64
		wantErr string // substring; "" means success
		tooBig  bool
		nFams   int
	}{
		{"empty page is valid and has no families", "", 0, "", false, 0},
		{"comments only", "# just a comment\n", 0, "", false, 0},
		{"colon names parse under the UTF-8 scheme", "vllm:num_requests_running{model_name=\"m\"} 1\n", 0, "", false, 1},
		{"page exactly at the cap is accepted", "a 1\n", 4, "", false, 1},
		{"page one byte over the cap is rejected whole", "a 1\nb", 4, "exceeds size limit", true, 0},
		{"non-numeric value names the line", "a{x=\"1\"} one\n", 0, "line 1", false, 0},
		{"unterminated label value", "a{x=\"1} 1\n", 0, "parsing page", false, 0},
		{"second TYPE line for one family", "# TYPE a gauge\na 1\n# TYPE a counter\n", 0, "second TYPE", false, 0},
		{"histogram bucket with a non-numeric le", "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 0, "'le' label", false, 0},
		{"unknown TYPE", "# TYPE a widget\na 1\n", 0, "unknown metric type", false, 0},
		{"braces without a name after a TYPE line (crashed expfmt before v0.72; an error either way)", "#TYPE A \n{}0", 0, "parsing page", false, 0},
		{"missing newline at end", "a 1", 0, "unexpected end of input", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fams, err := ParsePage(strings.NewReader(tt.page), tt.max)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				if len(fams) != tt.nFams {
					t.Fatalf("got %d families, want %d", len(fams), tt.nFams)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrTooLarge) != tt.tooBig {
				t.Fatalf("errors.Is(err, ErrTooLarge) = %v, want %v", !tt.tooBig, tt.tooBig)
			}
		})
	}
}

func TestFetchErrors(t *testing.T) {
	page := readFixture(t, "dcgm.prom")
	tests := []struct {
		name    string
		handler http.HandlerFunc
		opts    Options
		wantErr string
		tooBig  bool
	}{
		{
			name: "a non-200 status is an error naming the status",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "collector not ready", http.StatusServiceUnavailable)
			},
			wantErr: "503 Service Unavailable",
		},
		{
			name:    "a page over MaxBytes is ErrTooLarge, not a parse error",
			handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page) },
			opts:    Options{MaxBytes: int64(len(page)) - 1},
			wantErr: "exceeds size limit",
			tooBig:  true,
		},
		{
			name: "a server that never answers is cut off by Timeout",
			handler: func(_ http.ResponseWriter, r *http.Request) {
				<-r.Context().Done()
			},
			opts:    Options{Timeout: 20 * time.Millisecond},
			wantErr: "context deadline exceeded",
		},
		{
			name: "a truncated body is a parse error with the URL",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("# TYPE a gauge\na{x=\"1\""))
			},
			wantErr: "/metrics: scrape: parsing page",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, client := serve(t, tt.handler)
			tt.opts.Client = client
			_, err := Fetch(context.Background(), url, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if errors.Is(err, ErrTooLarge) != tt.tooBig {
				t.Fatalf("errors.Is(err, ErrTooLarge) = %v, want %v", !tt.tooBig, tt.tooBig)
			}
		})
	}
}

func TestFetchSendsTextAccept(t *testing.T) {
	var accept string
	url, client := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		_, _ = w.Write([]byte("a 1\n"))
	})
	if _, err := Fetch(context.Background(), url, Options{Client: client}); err != nil {
		t.Fatal(err)
	}
	// Servers that can negotiate protobuf or OpenMetrics must be steered to
	// the classic text format, the only one the parser reads.
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") {
		t.Fatalf("Accept = %q", accept)
	}
}
