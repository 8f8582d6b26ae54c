package llmtap

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// ScrapeKindDCGM names a dcgm-exporter page, read as GPU samples.
const ScrapeKindDCGM = scrape.KindDCGM

// DefaultScrapeInterval is the time between two scrapes of a metrics page.
const DefaultScrapeInterval = time.Second

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

func (c *ScrapeConfig) interval() time.Duration {
	if c.Interval <= 0 {
		return DefaultScrapeInterval
	}
	return time.Duration(c.Interval)
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

// scrapeRunner is the process's scrapers (a scrape.Pages), shared by every config with scrape
// pages (proc.pool, key "scrape"); each config that adopts it brings the set of pages to its
// own: a reload naming the same page, kind and interval keeps it running.
type scrapeRunner struct {
	*liveLogger
	pages scrape.Pages
}

func (a *App) startScrapes() (err error) {
	if len(a.Scrape) == 0 {
		return nil
	}
	pages := make([]scrape.Page, len(a.Scrape))
	for i, c := range a.Scrape {
		pages[i] = c.page()
		pages[i].Interval = c.interval()
	}
	a.scrape, err = adopt(keyScrape, a.logger, newScrapeRunner,
		func(r *scrapeRunner) error { return r.pages.Configure(pages) })
	return err
}

func (a *App) stopScrapes() { release(keyScrape, &a.scrape) }

func newScrapeRunner(l *liveLogger) *scrapeRunner {
	r := &scrapeRunner{liveLogger: l}
	r.pages = scrape.Pages{
		OnServer: func(url string, sm *scrape.ServerMetrics) {
			proc.hub.OnServer(url, sm)
			passiveHeadroom.ObserveServer(url, sm)
		},
		// A dcgm page stands in for NVML: its samples are used only while NVML sampling is not
		// running, so no GPU is counted twice.
		OnGPU: func(s []gpu.Sample) {
			if !nvmlActive() {
				proc.hub.OnGPU(s, inFlight())
			}
		},
		OnGPUStop: func() {
			if !nvmlActive() {
				proc.hub.ClearGPU()
			}
		},
		OnError: func(p scrape.Page, err error) {
			msg := "scraping the inference server's metrics failed"
			if p.Kind == ScrapeKindDCGM {
				msg = "scraping dcgm-exporter failed"
			}
			r.log().Warn(msg, zap.String("url", p.URL), zap.Error(err))
		},
		OnKindMismatch: func(p scrape.Page, detected scrape.ServerKind) {
			r.log().Warn("the metrics page is not the kind configured", zap.String("url", p.URL),
				zap.String("kind", p.Kind), zap.String("detected", string(detected)))
		},
	}
	return r
}

// Destruct stops every scraper when the last config with scrape pages is gone.
func (r *scrapeRunner) Destruct() error {
	r.pages.Stop()
	return nil
}
