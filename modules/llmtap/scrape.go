package llmtap

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/llmtap/llmtap/telemetry/gpu"
	"github.com/llmtap/llmtap/telemetry/scrape"
)

func init() {
	registerAppFeature(appFeature{
		name:          "scrape",
		subdirectives: []string{"scrape"},
		parse:         parseScrape,
		validate:      validateScrapes,
		start:         startScrapes,
		stop:          stopScrapes,
	})
}

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
	errs = append(errs, c.validateURL(), c.validateKind())
	if c.Interval < 0 {
		errs = append(errs, fmt.Errorf("interval must be positive"))
	}
	return errors.Join(errs...)
}

func (c *ScrapeConfig) validateURL() error {
	u, err := url.Parse(c.URL)
	if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an http:// or https:// address", c.URL)
	}
	return nil
}

func (c *ScrapeConfig) validateKind() error {
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

// parseScrape reads one scrape subdirective (the dispenser is on its name):
//
//	scrape <url> {
//	    kind     vllm|sglang|tgi|dcgm
//	    interval <duration>
//	}
func parseScrape(a *App, d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.Errf("scrape needs the URL of a metrics page, such as http://127.0.0.1:8000/metrics")
	}
	c := ScrapeConfig{URL: d.Val()}
	if err := c.validateURL(); err != nil {
		return d.Errf("scrape: %v", err)
	}
	if d.NextArg() {
		return d.Errf("scrape takes one URL, got another: %q", d.Val())
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch opt := d.Val(); opt {
		case "kind":
			if !d.NextArg() {
				return d.Errf("scrape kind needs a value: vllm, sglang, tgi or dcgm")
			}
			c.Kind = d.Val()
			if err := c.validateKind(); err != nil {
				return d.Errf("scrape: %v", err)
			}
			if d.NextArg() {
				return d.Errf("scrape kind takes one value, got another: %q", d.Val())
			}
		case "interval":
			dur, err := parseDurationArg(d, "scrape")
			if err != nil {
				return err
			}
			c.Interval = dur
		default:
			return d.Errf("unknown scrape option %q; expected kind or interval", opt)
		}
	}
	a.Scrape = append(a.Scrape, c)
	return nil
}

// scrapeKey identifies a running scraper: configs naming the same page, kind and interval
// share it across reloads.
type scrapeKey struct {
	url, kind string
	interval  time.Duration
}

// scrapeRunner is one page being scraped, by a goroutine of its own (a server page) or by a
// gpu.Sampler (a dcgm page).
type scrapeRunner struct {
	key     scrapeKey
	refs    int // under scrapeMu
	stop    chan struct{}
	done    chan struct{}
	sampler *gpu.Sampler
	src     *scrape.DCGMSource
	unsub   func()
}

var (
	scrapeMu sync.Mutex
	scrapers = map[scrapeKey]*scrapeRunner{}
)

func startScrapes(a *App) error {
	var held []*scrapeRunner
	for i := range a.Scrape {
		r, err := acquireScrape(&a.Scrape[i], a.logger)
		if err != nil {
			for _, h := range held {
				releaseScrape(h)
			}
			return err
		}
		held = append(held, r)
	}
	a.setFeatureState("scrape", held)
	return nil
}

func stopScrapes(a *App) error {
	held, _ := a.featureState("scrape").([]*scrapeRunner)
	a.setFeatureState("scrape", nil)
	for _, r := range held {
		releaseScrape(r)
	}
	return nil
}

func acquireScrape(c *ScrapeConfig, logger *zap.Logger) (*scrapeRunner, error) {
	key := scrapeKey{url: c.URL, kind: c.Kind, interval: c.interval()}
	scrapeMu.Lock()
	defer scrapeMu.Unlock()
	if r := scrapers[key]; r != nil {
		r.refs++
		return r, nil
	}
	r := &scrapeRunner{key: key, refs: 1, stop: make(chan struct{}), done: make(chan struct{})}
	log := logger.With(zap.String("url", c.URL))
	if c.Kind == ScrapeKindDCGM {
		r.src = scrape.NewDCGMSource(c.URL, scrape.Options{})
		r.sampler = gpu.NewSampler(r.src, gpu.Options{
			Interval: key.interval,
			OnError:  func(err error) { log.Warn("scraping dcgm-exporter failed", zap.Error(err)) },
		})
		r.unsub = r.sampler.Subscribe(func(s []gpu.Sample) {
			if !nvmlActive() {
				hub.onGPU(s)
			}
		})
		if err := r.sampler.Start(context.Background()); err != nil {
			return nil, err
		}
		close(r.done)
	} else {
		go r.runServer(c, log)
	}
	scrapers[key] = r
	return r, nil
}

func releaseScrape(r *scrapeRunner) {
	scrapeMu.Lock()
	r.refs--
	last := r.refs == 0
	if last {
		delete(scrapers, r.key)
	}
	scrapeMu.Unlock()
	if !last {
		return
	}
	if r.sampler != nil {
		r.unsub()
		r.sampler.Stop()
		_ = r.src.Close()
		if !nvmlActive() {
			hub.clearGPU()
		}
		return
	}
	close(r.stop)
	<-r.done
}

// runServer scrapes an inference server's page until stop, logging each cause of failure
// once (again after the page was read successfully in between).
func (r *scrapeRunner) runServer(c *ScrapeConfig, log *zap.Logger) {
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
	ticker := time.NewTicker(r.key.interval)
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
				log.Warn("scraping the inference server's metrics failed", zap.Error(err))
			}
		default:
			lastErr = ""
			if !kindChecked {
				kindChecked = true
				if c.Kind != "" && string(sm.Kind) != c.Kind {
					log.Warn("the metrics page is not the kind configured", zap.String("kind", c.Kind), zap.String("detected", string(sm.Kind)))
				}
			}
			hub.onServer(c.URL, &sm)
		}
		select {
		case <-r.stop:
			return
		case <-ticker.C:
		}
	}
}
