package bench

import (
	"context"
	"time"

	"github.com/llmtap/llmtap/format/aiperf"
)

// timeoutAfter returns ctx cancelled d after now (AIPerf's --request-timeout-seconds: aiohttp's
// total timeout, from the request's start), marking si as timed out when it fires, and the
// function that stops the timer once the exchange is over, then runs prev (another closer of
// the exchange, or nil).
func (si *sendInfo) timeoutAfter(ctx context.Context, d time.Duration, prev func()) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(d, func() { si.timedOut.Store(true); cancel() })
	return ctx, func() {
		t.Stop()
		cancel()
		if prev != nil {
			prev()
		}
	}
}

// timeoutType is the error type AIPerf records for a request over its timeout: aiohttp raises
// asyncio's TimeoutError, and aiperf.ErrorDetails.from_exception takes the exception's class name
// (with no HTTP code).
const timeoutType = "TimeoutError"

// timeoutDetails is the error of a request the timeout cancelled.
func timeoutDetails() *aiperf.ErrorDetails {
	t := timeoutType
	return &aiperf.ErrorDetails{Type: &t, Message: "request cancelled by --request-timeout-seconds"}
}
