package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/llmtap/llmtap/ui"
)

//go:embed report.html.tmpl
var reportTemplate string

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"splitLegend": splitLegend,
	"f1":          func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"f2":          func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	// g6 writes small sums (GPU-seconds, costs of a few requests) with 6 significant digits.
	"g6": func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) },
	"f3": func(v float64) string {
		if math.IsInf(v, 0) {
			return map[bool]string{true: "∞", false: "−∞"}[v > 0]
		}
		return strconv.FormatFloat(v, 'f', 3, 64)
	},
	"pct":  func(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" },
	"pct4": func(v float64) string { return strconv.FormatFloat(100*v, 'f', 4, 64) + "%" },
	"ratio": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + "×"
	},
}).Parse(reportTemplate))

// WriteHTML writes the report as one self-contained HTML document: styles, scripts and data
// inline, a Content-Security-Policy that forbids loading anything, so it opens the same from a
// file, a mail attachment or a web server with no network.
func (rep *Report) WriteHTML(w io.Writer) error {
	data, err := json.Marshal(struct {
		Sections []Section `json:"sections"`
	}{rep.Sections})
	if err != nil {
		return err
	}
	render := func(csp string) (string, error) {
		var b bytes.Buffer
		err := tmpl.Execute(&b, struct {
			R    *Report
			CSP  string
			Data template.JS
		}{rep, csp, template.JS(data)})
		return b.String(), err
	}
	// The page is rendered twice: once to learn the inline blocks' hashes (the CSP lives in
	// the page itself), then with the policy filled in.
	first, err := render("")
	if err != nil {
		return err
	}
	_, csp, err := ui.Inline(first)
	if err != nil {
		return err
	}
	doc, err := render(csp)
	if err != nil {
		return err
	}
	page, _, err := ui.Inline(doc)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, page)
	return err
}
