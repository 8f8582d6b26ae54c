package gen

import (
	"bytes"
	"context"
	"net/http"
	"time"
)

// Request builds the n-th request of a run. It is called from the goroutine that sends the
// request, so calls for different requests may run concurrently.
type Request func(ctx context.Context, n int) (*http.Request, error)

// ChatRequest returns a Request that posts the same OpenAI chat-completions body to url.
func ChatRequest(url string, body []byte) Request {
	return func(ctx context.Context, n int) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

// Stamp is one request's timeline, as offsets from the start of the run (monotonic clock).
// Latency of generated load is measured from Intended, so a generator that falls behind, or a
// ceiling that queues requests, shows up in the figures instead of hiding in a lower rate.
type Stamp struct {
	// N numbers the request in schedule order, from 0.
	N int
	// Intended is when the schedule wanted the request sent. In closed loop, where there is no
	// schedule, it is when the worker took the request up, equal to Released.
	Intended time.Duration
	// Released is when the pacer let the request go.
	Released time.Duration
	// Sent is when the request got an in-flight slot and went to the HTTP client: Released,
	// unless it waited in the queue for a slot.
	Sent time.Duration
	// Done is when the response body had been read to the end, or the request failed.
	Done time.Duration
}

// Lag is the schedule lag, Released − Intended: how late the generator itself was.
func (s Stamp) Lag() time.Duration { return s.Released - s.Intended }

// QueueWait is how long the request waited for an in-flight slot, Sent − Released.
func (s Stamp) QueueWait() time.Duration { return s.Sent - s.Released }

// Latency is the request latency the server is responsible for, Done − Sent.
func (s Stamp) Latency() time.Duration { return s.Done - s.Sent }

// EffectiveLatency is the latency a user arriving at the intended time would have seen,
// Done − Intended = Latency + QueueWait + Lag.
func (s Stamp) EffectiveLatency() time.Duration { return s.Done - s.Intended }

// Outcome is one finished request.
type Outcome struct {
	Stamp
	// Status is the HTTP status code, 0 when no response arrived.
	Status int
	// Err is why the request failed to be built, sent or read; nil for any response read in
	// full, whatever its status.
	Err error
}

type intendedKey struct{}

// IntendedTime returns the intended send time of the request whose context ctx is (the context
// a [Request] receives), so that code further along, such as a proxy marking shadow load, can
// measure from it too.
func IntendedTime(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(intendedKey{}).(time.Time)
	return t, ok
}
