package llmtap

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

// ScrapeKindDCGM names a dcgm-exporter page, read as GPU samples.
const ScrapeKindDCGM = "dcgm"

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

func (c *ScrapeConfig) validate() error {
	var errs []error
	errs = append(errs, c.CheckURL(), c.CheckKind())
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval must be positive"))
	}
	return errors.Join(errs...)
}

// CheckURL reports whether the URL is an http:// or https:// address (the Caddyfile parser
// checks it on the scrape line, Validate again with the rest).
func (c *ScrapeConfig) CheckURL() error {
	u, err := url.Parse(c.URL)
	if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http:// or https:// address", c.URL)
	}
	return nil
}

// CheckKind reports whether the kind is one llmtap knows.
func (c *ScrapeConfig) CheckKind() error {
	switch scrape.ServerKind(c.Kind) {
	case scrape.KindUnknown, scrape.KindVLLM, scrape.KindSGLang, scrape.KindTGI, ScrapeKindDCGM:
		return nil
	}
	return fmt.Errorf("kind %q is not a known kind; expected vllm, sglang, tgi or dcgm", c.Kind)
}

func validateScrapes(a *App) error {
	var errs []error
	dcgm := 0
	for i := range a.Scrape {
		if err := a.Scrape[i].validate(); err != nil {
			errs = append(errs, fmt.Errorf("scrape %d (%s): %w", i, a.Scrape[i].URL, err))
		}
		if a.Scrape[i].Kind == ScrapeKindDCGM {
			dcgm++
		}
	}
	if dcgm > 1 {
		errs = append(errs, fmt.Errorf("%d dcgm pages configured; at most one GPU source can be attributed", dcgm))
	}
	return errors.Join(errs...)
}

// scrapeKey identifies a page scraper: a reload naming the same page, kind and interval keeps
// it running.
type scrapeKey struct {
	url, kind string
	interval  time.Duration
}

// scrapeRunner is the process's scrapers, shared by every config with scrape pages
// (proc.pool, key "scrape"); each config that adopts it brings the set of pages to its own.
type scrapeRunner struct {
	*liveLogger

	mu    sync.Mutex // held while (re)configuring
	pages map[scrapeKey]*pageScraper
}

// pageScraper is one page being scraped, by a goroutine of its own (a server page) or by a
// gpu.Sampler (a dcgm page).
type pageScraper struct {
	stop    chan struct{}
	done    chan struct{}
	sampler *gpu.Sampler
	src     *scrape.DCGMSource
	unsub   func()
}

func (a *App) startScrapes() (err error) {
	if len(a.Scrape) == 0 {
		return nil
	}
	a.scrape, err = adopt(keyScrape, a.logger,
		func(l *liveLogger) *scrapeRunner {
			return &scrapeRunner{liveLogger: l, pages: map[scrapeKey]*pageScraper{}}
		},
		func(r *scrapeRunner) error { return r.configure(a.Scrape) })
	return err
}

func (a *App) stopScrapes() { release(keyScrape, &a.scrape) }

// configure scrapes exactly the pages of cfgs: pages already scraped go on, others start,
// pages no longer named stop.
func (r *scrapeRunner) configure(cfgs []ScrapeConfig) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	want := make(map[scrapeKey]bool, len(cfgs))
	for i := range cfgs {
		want[scrapeKey{url: cfgs[i].URL, kind: cfgs[i].Kind, interval: cfgs[i].interval()}] = true
	}
	for k, p := range r.pages {
		if !want[k] {
			delete(r.pages, k)
			p.halt()
		}
	}
	for i := range cfgs {
		c := &cfgs[i]
		key := scrapeKey{url: c.URL, kind: c.Kind, interval: c.interval()}
		if r.pages[key] != nil {
			continue
		}
		p, err := r.startPage(c, key)
		if err != nil {
			return err
		}
		r.pages[key] = p
	}
	return nil
}

func (r *scrapeRunner) startPage(c *ScrapeConfig, key scrapeKey) (*pageScraper, error) {
	p := &pageScraper{stop: make(chan struct{}), done: make(chan struct{})}
	if c.Kind != ScrapeKindDCGM {
		cc := *c
		go p.runServer(&cc, key.interval, r.liveLogger)
		return p, nil
	}
	url := c.URL
	p.src = scrape.NewDCGMSource(url, scrape.Options{})
	p.sampler = gpu.NewSampler(p.src, gpu.Options{
		Interval: key.interval,
		OnError: func(err error) {
			r.log().Warn("scraping dcgm-exporter failed", zap.String("url", url), zap.Error(err))
		},
	})
	p.unsub = p.sampler.Subscribe(func(s []gpu.Sample) {
		if !nvmlActive() {
			proc.hub.onGPU(s)
		}
	})
	if err := p.sampler.Start(context.Background()); err != nil {
		return nil, err
	}
	close(p.done)
	return p, nil
}

// Destruct stops every scraper when the last config with scrape pages is gone.
func (r *scrapeRunner) Destruct() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, p := range r.pages {
		delete(r.pages, k)
		p.halt()
	}
	return nil
}

// halt stops the page's scraper and waits for it.
func (p *pageScraper) halt() {
	if p.sampler != nil {
		p.unsub()
		p.sampler.Stop()
		_ = p.src.Close()
		if !nvmlActive() {
			proc.hub.clearGPU()
		}
		return
	}
	close(p.stop)
	<-p.done
}

// runServer scrapes an inference server's page until stop, logging each cause of failure
// once (again after the page was read successfully in between).
func (r *pageScraper) runServer(c *ScrapeConfig, interval time.Duration, ll *liveLogger) {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	s := scrape.NewServerScraper(c.URL, scrape.Options{})
	ticker := time.NewTicker(interval)
	log := func() *zap.Logger { return ll.log().With(zap.String("url", c.URL)) }
	defer ticker.Stop()
	var lastErr string
	kindChecked := false
	for {
		sm, err := s.Scrape(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				lastErr = msg
				log().Warn("scraping the inference server's metrics failed", zap.Error(err))
			}
		default:
			lastErr = ""
			if !kindChecked {
				kindChecked = true
				if c.Kind != "" && string(sm.Kind) != c.Kind {
					log().Warn("the metrics page is not the kind configured", zap.String("kind", c.Kind), zap.String("detected", string(sm.Kind)))
				}
			}
			proc.hub.onServer(c.URL, &sm)
		}
		select {
		case <-r.stop:
			return
		case <-ticker.C:
		}
	}
}
