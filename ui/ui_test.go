package ui

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestInline(t *testing.T) {
	page, csp, err := Inline(`<head><link rel="stylesheet" href="style.css"></head><body><script src="charts.js"></script></body>`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "<link") || strings.Contains(page, "src=") {
		t.Errorf("tags left in the page: %.200s", page)
	}
	// Every inline block is allowed by its hash, and nothing else is.
	blocks := regexp.MustCompile(`(?s)<(style|script)>(.*?)</(?:style|script)>`).FindAllStringSubmatch(page, -1)
	if len(blocks) != 2 {
		t.Fatalf("%d inline blocks, want 2", len(blocks))
	}
	for _, b := range blocks {
		sum := sha256.Sum256([]byte(b[2]))
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(csp, b[1]+"-src "+h) {
			t.Errorf("CSP %q does not allow the %s block by %s", csp, b[1], h)
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if _, _, err := Inline(`<script src="missing.js"></script>`); err == nil {
		t.Error("a missing asset was inlined")
	}
}

func TestDashboardHandler(t *testing.T) {
	h, err := Dashboard(func() []string { return []string{"/llmtap/summary", `/x"<y`} })
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/llmtap/ui/", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	// The routes are escaped into the body's attribute.
	if !strings.Contains(body, `<body data-routes="/llmtap/summary /x&#34;&lt;y">`) {
		t.Errorf("routes not in the page: %.300s", body[strings.Index(body, "<body"):])
	}
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'sha256-") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if strings.Contains(body, "<script src=") {
		t.Error("the page loads a script")
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/llmtap/ui/", nil))
	if rec.Body.Len() != 0 {
		t.Errorf("HEAD wrote %d bytes", rec.Body.Len())
	}
}
