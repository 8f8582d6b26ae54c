package bench

import (
	"context"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/llmtap/llmtap/telemetry/decode"
	"github.com/llmtap/llmtap/telemetry/framing"
)

// MaxReply bounds the response bytes kept to read a reply's text from (Spec.Reply): a longer
// response gives the text of its first MaxReply bytes.
const MaxReply = 4 << 20

// replyKey carries a request's number to the reply transport.
type replyKey struct{}

// replyTransport hands the text of each response to reply before the response's reader sees
// its end: a multi-turn conversation appends the assistant's reply to its next turn, as
// AIPerf does. It sits outside the measuring transport and copies bytes only.
type replyTransport struct {
	base  http.RoundTripper
	reply func(n int, text string)
}

func (t *replyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	n, ok := req.Context().Value(replyKey{}).(int)
	if err != nil || !ok {
		return resp, err
	}
	resp.Body = &replyBody{ReadCloser: resp.Body, n: n, path: req.URL.Path,
		contentType: resp.Header.Get("Content-Type"), reply: t.reply}
	return resp, nil
}

// withReply marks ctx's request as request n, whose reply text is wanted.
func withReply(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, replyKey{}, n)
}

// replyBody keeps the first MaxReply bytes read and hands their text on at the end of the
// body (or at Close, for a response cut short), once.
type replyBody struct {
	io.ReadCloser
	n           int
	path        string
	contentType string
	reply       func(n int, text string)
	buf         []byte
	once        sync.Once
}

func (b *replyBody) Read(p []byte) (int, error) {
	k, err := b.ReadCloser.Read(p)
	if room := MaxReply - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(k, room)]...)
	}
	if err != nil {
		b.done()
	}
	return k, err
}

func (b *replyBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}

func (b *replyBody) done() {
	b.once.Do(func() {
		b.reply(b.n, ReplyText(b.path, b.contentType, b.buf))
		b.buf = nil
	})
}

// ReplyText returns the text a response generated (content, every choice, as the measuring
// engine decodes it), read from its body as received: an SSE or NDJSON stream, or a JSON body.
func ReplyText(path, contentType string, body []byte) string {
	_, dec := decode.ForPath(path, contentType)
	defer decode.Put(dec)
	if l, ok := dec.(decode.TextLimiter); ok {
		l.SetMaxText(MaxReply)
	}
	ct, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		ct = strings.ToLower(strings.TrimSpace(contentType))
	}
	onEvent := func(ev *framing.Event) { dec.Event(ev.Type, ev.Data) }
	switch ct {
	case "text/event-stream":
		f := framing.NewSSE(MaxReply, onEvent)
		f.Write(body, 0)
		f.Close()
	case "application/x-ndjson", "application/jsonl", "application/ndjson", "application/json-seq":
		f := framing.NewNDJSON(MaxReply, onEvent)
		f.Write(body, 0)
		f.Close()
	default:
		dec.Body(body)
	}
	return string(dec.Result().Text)
}
