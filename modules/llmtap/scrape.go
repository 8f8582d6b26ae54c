package llmtap

import (
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/llmtap/llmtap/telemetry/scrape"
)

// ScrapeConfig is one Prometheus metrics page llmtap reads on an interval (JSON `"scrape"` of
// the llmtap app, a list; Caddyfile `scrape <url> { … }` in the llmtap global option, once per
// page). An inference server's page (vLLM, SGLang, TGI) gives the timeline the server's own
// view — KV-cache usage, running and waiting requests, prefix-cache hit rate, token rates and
// its TTFT/ITL histograms; a dcgm-exporter page gives GPU samples where NVML cannot be used
// (a binary built without cgo, GPUs visible only to the exporter). A page that cannot be read
// is logged once per cause and tried again on the next interval; it never fails the config.
type ScrapeConfig struct {
	// URL is the page, for example "http://127.0.0.1:8000/metrics". Required; http or https.
	URL string `json:"url"`

	// Kind says what the page is: "vllm", "sglang", "tgi" or "dcgm". For an inference server
	// it may be left empty and is then detected from the metric names; when it is set and the
	// page turns out to be another server's, that is logged once. "dcgm" must be named. At
	// most one dcgm page may be configured, and its samples are used only while NVML sampling
	// is not running, so no GPU is counted twice.
	Kind string `json:"kind,omitempty"`

	// Interval is the time between two scrapes. dcgm-exporter collects every 30 s unless
	// started with a shorter -c; scraping faster than it collects repeats values.
	// Default: 1s.
	Interval caddy.Duration `json:"interval,omitempty"`
}

// page is the page to read, its interval as configured (0: the default).
func (c *ScrapeConfig) page() scrape.Page {
	return scrape.Page{URL: c.URL, Kind: c.Kind, Interval: time.Duration(c.Interval)}
}

// CheckURL reports whether the URL is an http:// or https:// address (the Caddyfile parser
// checks it on the scrape line, Validate again with the rest).
func (c *ScrapeConfig) CheckURL() error { return scrape.ValidateURL(c.URL) }

// CheckKind reports whether the kind is one llmtap knows.
func (c *ScrapeConfig) CheckKind() error { return scrape.ValidateKind(c.Kind) }

func validateScrapes(a *App) error {
	pages := make([]scrape.Page, len(a.Scrape))
	for i := range a.Scrape {
		pages[i] = a.Scrape[i].page()
	}
	return scrape.ValidatePages(pages)
}

func (a *App) startScrapes() (func(), error) {
	if len(a.Scrape) == 0 {
		return nil, nil
	}
	pages := make([]scrape.Page, len(a.Scrape))
	for i, c := range a.Scrape {
		if pages[i] = c.page(); pages[i].Interval <= 0 {
			pages[i].Interval = time.Second // the default of ScrapeConfig.Interval
		}
	}
	return a.proc.HoldScrapes(a.logger, pages)
}
