// Package ui holds llmtap's web assets: the live dashboard (dashboard.html, dashboard.js)
// served on Caddy's admin listener, and the chart renderer (charts.js) and stylesheet that the
// dashboard and the HTML reports of package report share. Everything is embedded in the binary
// and inlined into one document; nothing is fetched from another origin.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
)

//go:embed static
var static embed.FS

// Asset returns the content of one embedded asset (charts.js, style.css, …).
func Asset(name string) (string, error) {
	b, err := fs.ReadFile(static, "static/"+name)
	return string(b), err
}

// assetTag matches the tags Inline replaces: a stylesheet link or a script with a src.
var assetTag = regexp.MustCompile(`<link rel="stylesheet" href="([a-z0-9._-]+)">|<script src="([a-z0-9._-]+)"></script>`)

// Inline replaces every <link rel="stylesheet" href="X"> and <script src="X"></script> of doc
// by the embedded asset X inside <style> or <script>, and returns the document with a
// Content-Security-Policy that allows exactly those inline blocks (by hash), connections to
// the page's own origin and nothing else.
//
// Pages are inlined because Caddy's admin listener refuses requests that browsers send in
// no-cors mode, which is how they fetch classic scripts and stylesheets: one document is the
// only form of page that loads there. Reports are single files for their own reasons.
func Inline(doc string) (page, csp string, err error) {
	var scripts, styles []string
	page = assetTag.ReplaceAllStringFunc(doc, func(tag string) string {
		m := assetTag.FindStringSubmatch(tag)
		name, open, end := m[1], "<style>", "</style>"
		if name == "" {
			name, open, end = m[2], "<script>", "</script>"
		}
		body, aerr := Asset(name)
		if aerr != nil {
			err = fmt.Errorf("inlining %s: %w", name, aerr)
			return tag
		}
		if strings.Contains(body, end) {
			err = fmt.Errorf("inlining %s: it contains %s", name, end)
			return tag
		}
		sum := sha256.Sum256([]byte(body))
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if open == "<style>" {
			styles = append(styles, h)
		} else {
			scripts = append(scripts, h)
		}
		return open + body + end
	})
	csp = "default-src 'none'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'" +
		"; style-src " + sources(styles) + "; script-src " + sources(scripts)
	return page, csp, err
}

// sources is a CSP source list: the hashes, or 'none'.
func sources(hashes []string) string {
	if len(hashes) == 0 {
		return "'none'"
	}
	return strings.Join(hashes, " ")
}

// routesMark is where Dashboard puts the server's admin routes into the page, per request.
const routesMark = "\x00routes\x00"

// Dashboard returns an http.Handler that serves the live dashboard page (dashboard.html with
// its assets inlined). routes returns the admin routes the server can answer now (their
// patterns); the page reads only those, so a server without a timeline or shadow control shows
// the fallback or disabled controls instead of asking for a route that is not there. It fails
// when an asset is missing.
func Dashboard(routes func() []string) (http.Handler, error) {
	doc, err := Asset("dashboard.html")
	if err != nil {
		return nil, err
	}
	doc = strings.Replace(doc, "<body>", `<body data-routes="`+routesMark+`">`, 1)
	page, csp, err := Inline(doc)
	if err != nil {
		return nil, err
	}
	before, after, ok := strings.Cut(page, routesMark)
	if !ok {
		return nil, fmt.Errorf("dashboard.html has no <body> tag")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", csp+"; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		h.Set("Referrer-Policy", "same-origin")
		if r.Method == http.MethodHead {
			return
		}
		io.WriteString(w, before+html.EscapeString(strings.Join(routes(), " "))+after) //nolint:errcheck // the client went away
	}), nil
}
