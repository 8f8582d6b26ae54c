package scrape

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/llmtap/llmtap/internal/lifecycle"
	"github.com/llmtap/llmtap/telemetry/gpu"
)

// KindDCGM names a dcgm-exporter page, read as GPU samples rather than server metrics.
const KindDCGM = "dcgm"

// Page is one metrics page read on an interval.
type Page struct {
	// URL is the page. Kind is a ServerKind ("" detects it) or KindDCGM. Interval is the time
	// between two reads, positive.
	URL, Kind string
	Interval  time.Duration
}

// Validate reports every problem of the page at once: a URL that is not http:// or https://
// with a host, an unknown kind, a negative interval (zero is left to the caller's default).
func (p Page) Validate() error {
	var errs []error
	errs = append(errs, ValidateURL(p.URL), ValidateKind(p.Kind))
	if p.Interval < 0 {
		errs = append(errs, errors.New("interval must be positive"))
	}
	return errors.Join(errs...)
}

// ValidatePages validates every page, and that at most one is a dcgm page (a GPU read from
// two sources would be counted twice).
func ValidatePages(pages []Page) error {
	var errs []error
	dcgm := 0
	for i, p := range pages {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("scrape %d (%s): %w", i, p.URL, err))
		}
		if p.Kind == KindDCGM {
			dcgm++
		}
	}
	if dcgm > 1 {
		errs = append(errs, fmt.Errorf("%d dcgm pages configured; at most one GPU source can be attributed", dcgm))
	}
	return errors.Join(errs...)
}

// ValidateURL reports a URL that is not http:// or https:// with a host.
func ValidateURL(u string) error {
	pu, err := url.Parse(u)
	if u == "" || err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return fmt.Errorf("url %q is not an http:// or https:// address", u)
	}
	return nil
}

// ValidateKind reports a kind that is neither a known server nor KindDCGM.
func ValidateKind(kind string) error {
	switch ServerKind(kind) {
	case KindUnknown, KindVLLM, KindSGLang, KindTGI, KindDCGM:
		return nil
	}
	return fmt.Errorf("kind %q is not a known kind; expected vllm, sglang, tgi or dcgm", kind)
}

// Pages reads a set of metrics pages, each on a goroutine of its own: an inference server's
// page is handed to OnServer on every successful read, a dcgm-exporter page is polled by a
// gpu.Sampler whose samples go to OnGPU. Configure changes the set in place: pages already read
// go on (a Page is its URL, kind and interval), others start, pages no longer named stop. The
// callbacks are set before the first Configure and called from the pages' goroutines.
type Pages struct {
	// OnServer receives each read of a server page. Required when a server page is read.
	OnServer func(url string, sm *ServerMetrics)
	// OnGPU receives each poll of a dcgm page, and OnGPUStop is called when one stops.
	// Required when a dcgm page is read.
	OnGPU     func([]gpu.Sample)
	OnGPUStop func()
	// OnError, when set, is told each new cause of failure of a page: again only after the
	// page was read successfully in between (a server page) or for another message (a dcgm
	// page, as gpu.Sampler reports).
	OnError func(p Page, err error)
	// OnKindMismatch, when set, is told once per server page whose kind is set and differs
	// from the kind detected on the page.
	OnKindMismatch func(p Page, detected ServerKind)
	// Fetch are the fetch options of every page (the zero value: the defaults).
	Fetch Options

	mu    sync.Mutex // held while (re)configuring
	pages map[Page]closer
}

// Configure reads exactly pages: those already read go on, others start, the rest stop.
func (p *Pages) Configure(pages []Page) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := make(map[Page]bool, len(pages))
	for _, pg := range pages {
		want[pg] = true
	}
	for pg, l := range p.pages {
		if !want[pg] {
			delete(p.pages, pg)
			_ = l.Close(context.Background())
		}
	}
	for _, pg := range pages {
		if p.pages[pg] != nil {
			continue
		}
		if p.pages == nil {
			p.pages = map[Page]closer{}
		}
		p.pages[pg] = p.start(pg)
	}
}

// Close stops every page, waiting for their readers until ctx ends. It is idempotent; a
// later Configure starts pages again.
func (p *Pages) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for pg, l := range p.pages {
		delete(p.pages, pg)
		errs = append(errs, l.Close(ctx))
	}
	return errors.Join(errs...)
}

// closer is a page being read: a server page's loop, or a dcgm page's sampler.
type closer interface {
	Close(ctx context.Context) error
}

// start reads pg until it is closed: in a loop of its own (a server page) or by a gpu.Runner
// (a dcgm page).
func (p *Pages) start(pg Page) closer {
	if pg.Kind != KindDCGM {
		return lifecycle.Go(func(ctx context.Context) error { p.runServer(ctx, pg); return nil })
	}
	g := &dcgmPage{onStop: p.OnGPUStop}
	g.Open = func() (gpu.Source, error) { return NewDCGMSource(pg.URL, p.Fetch), nil }
	g.OnSamples = p.OnGPU
	g.OnError = func(err error) { // a dcgm source never reports ErrNoNVML
		if p.OnError != nil {
			p.OnError(pg, err)
		}
	}
	g.Configure(pg.Interval)
	return g
}

// dcgmPage is a dcgm page's sampler; closing it (and its source, whose Close cancels a read)
// then calls onStop.
type dcgmPage struct {
	gpu.Runner
	onStop func()
}

func (d *dcgmPage) Close(ctx context.Context) error {
	if d.onStop != nil {
		defer d.onStop()
	}
	return d.Runner.Close(ctx)
}

// runServer reads an inference server's page until ctx is done, reporting each cause of
// failure once (again after the page was read successfully in between).
func (p *Pages) runServer(ctx context.Context, pg Page) {
	s := NewServerScraper(pg.URL, p.Fetch)
	ticker := time.NewTicker(pg.Interval)
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
				if p.OnError != nil {
					p.OnError(pg, err)
				}
			}
		default:
			lastErr = ""
			if !kindChecked {
				kindChecked = true
				if pg.Kind != "" && string(sm.Kind) != pg.Kind && p.OnKindMismatch != nil {
					p.OnKindMismatch(pg, sm.Kind)
				}
			}
			p.OnServer(pg.URL, &sm)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
