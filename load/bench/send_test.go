package bench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmtap/llmtap/load/gen"
	"github.com/llmtap/llmtap/telemetry/tap"
)

// cannedTransport answers every request with the same non-streaming chat completion, in memory.
type cannedTransport struct{}

const cannedBody = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`

func (cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(cannedBody)), Request: r}, nil
}

// BenchmarkMeasuredRequest is llmtap bench's own cost per request on the client side: building
// the request, metering the response, finalizing and aggregating the record and writing its
// export line, without the network.
func BenchmarkMeasuredRequest(b *testing.B) {
	tp := tap.New(tap.Options{Queue: 1 << 16})
	defer tp.Close(context.Background())
	col := newCollector("bench-x-", "profiling", io.Discard, nil)
	snd := newSender(cannedTransport{}, tp, "bench", col)
	snd.baseURL = "http://127.0.0.1"
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"Say hi."}],"max_tokens":4}`)
	snd.build = func(int) (Request, error) { return Request{Path: "/v1/chat/completions", Body: body}, nil }
	ctx := context.Background()
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		req, err := snd.request(ctx, n, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		resp, err := snd.client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		col.done(gen.Outcome{Stamp: gen.Stamp{N: n}, Status: 200})
	}
	tp.Flush()
	if err := col.flush(); err != nil {
		b.Fatal(err)
	}
}
