package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Defaults applied to zero [Options] fields.
const (
	// DefaultTimeout bounds one scrape, request and body together. It is
	// shorter than any sensible poll interval of a metrics page, so a hung
	// exporter costs one missed poll rather than a pile of requests.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxBytes is the largest page accepted. A dcgm-exporter page for
	// 8 GPUs is about 100 KiB and a vLLM page with a few models a few hundred
	// KiB; 8 MiB leaves room for many models while keeping a runaway or
	// hostile endpoint from exhausting memory.
	DefaultMaxBytes = 8 << 20
)

// acceptHeader asks for the classic text format only: it is what every
// server named in this package speaks, and the text parser cannot read
// protobuf or the OpenMetrics EOF marker.
const acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"

// ErrTooLarge reports a page longer than [Options.MaxBytes]. Such a page is
// rejected whole.
var ErrTooLarge = errors.New("scrape: page exceeds size limit")

// Options configures fetching. The zero value is usable.
type Options struct {
	// Timeout bounds one scrape, from sending the request to the end of the
	// body. Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxBytes is the largest body accepted; a longer one fails with
	// ErrTooLarge. Zero means DefaultMaxBytes.
	MaxBytes int64
	// Client sends the requests. Nil means a client of its own with no
	// timeout of its own (Timeout is applied through the request context).
	Client *http.Client
	// Now stamps samples. Nil means time.Now; tests pass a fixed clock.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Families is one parsed page: metric families by the name they carry on
// the wire. A counter exposed as "x_total" is found under "x_total"
// whether or not its TYPE line used the bare name.
type Families map[string]*dto.MetricFamily

// ParsePage reads one text exposition page of at most maxBytes bytes (zero
// or less means DefaultMaxBytes) and parses it. It reads the whole page
// before parsing so that an oversized page is rejected with ErrTooLarge
// instead of being parsed up to the limit and reported as malformed.
func ParsePage(r io.Reader, maxBytes int64) (Families, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("scrape: reading page: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, maxBytes)
	}
	return parseBytes(body)
}

// errParserPanic is wrapped by the error for a page that crashed the
// parser.
var errParserPanic = errors.New("parser panicked on malformed input")

func parseBytes(body []byte) (fams Families, err error) {
	// The parser is not panic-free on hostile input: FuzzParsePage found
	// that prometheus/common v0.71.0 dereferences a nil metric at
	// text_parse.go:352 for "# TYPE a gauge\n{}0" (a TYPE line, then a
	// sample with braces but no name). A metrics page is untrusted input,
	// so such a page becomes an error rather than a crashed process.
	defer func() {
		if r := recover(); r != nil {
			fams, err = nil, fmt.Errorf("scrape: parsing page: %w: %v", errParserPanic, r)
		}
	}()
	// UTF-8 validation accepts everything the legacy scheme does (the
	// "vllm:" colons included) and the quoted names newer exporters emit.
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("scrape: parsing page: %w", err)
	}
	return Families(m), nil
}

// Fetch GETs url and parses the page, bounded by opts' Timeout and
// MaxBytes. A status other than 200 is an error naming the status.
func Fetch(ctx context.Context, url string, opts Options) (Families, error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape: building request: %w", err)
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: fetching %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("scrape: fetching %s: status %s", url, resp.Status)
	}
	fams, err := ParsePage(resp.Body, opts.MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("scrape: %s: %w", url, err)
	}
	return fams, nil
}
