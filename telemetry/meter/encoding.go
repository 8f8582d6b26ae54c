package meter

import (
	"compress/gzip"
	"errors"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
)

// The meter decodes an encoded body in the proxy's write path (the next write waits for the
// decoder), so what one response may cost it to decode is bounded twice:
//
//   - by ratio: past inflateSlack, every encoded byte may yield at most maxInflateRatio
//     decoded bytes. Deflate's own maximum is about 1032:1, reached only by long runs of one
//     byte, and brotli reaches millions to one: that is a decompression bomb. A real stream
//     stays far below (a streaming server flushes every event, which keeps gzip under 30:1;
//     an unflushed, very repetitive stream reaches a few hundred to one), so the bound is
//     2.5 times the 200:1 such a stream may reach and half of deflate's maximum: a bomb of runs
//     trips it after about 2 KiB of input (2 MiB decoded) whatever its coding;
//   - by size: at most Options.MaxDecoded bytes (a non-streaming body: only what the meter
//     keeps of it, MaxBody), however slowly they expand.
//
// When a bound is hit the meter stops decoding and says so in the record (decode_stopped);
// the rest of the body still passes to the client untouched, unmeasured. Memory is bounded
// regardless: the decoders keep a fixed window and the framer holds at most MaxEvent.
const (
	maxInflateRatio = 512
	inflateSlack    = 1 << 20
	inflateBuf      = 32 << 10
)

// Why decoding stopped early (the record's decode_stopped).
var (
	errInflateBomb  = errors.New("the body decoded to more than 512 times its encoded size")
	errInflateLimit = errors.New("the decoded body reached the size bound")
)

// inflater decodes a copy of a gzip- or br-encoded response for the framer, incrementally: the
// proxy passes the encoded bytes to the client untouched, and the meter measures the events
// they decode to, each at the time its encoded bytes were written.
//
// The standard decoders pull from an io.Reader, while the meter is pushed writes, so the
// decoder runs in its own goroutine reading from a feed that the meter's Write hands each
// write to. Write waits until the decoder asked for more input — it has then decoded and
// framed everything that write made decodable — so the framer and the meter are only ever used
// by one goroutine at a time, handed over through the channels. The goroutine ends in close.
type inflater struct {
	in     chan []byte   // the next encoded write; closed by close
	ack    chan struct{} // the decoder consumed the write and wants more
	exited chan struct{} // closed when the goroutine is done

	at      int64               // time of the write being decoded (set before it is sent)
	emit    func([]byte, int64) // receives decoded bytes; called on the decoder goroutine
	cur     []byte              // the part of the current write not yet read by the decoder
	pending bool                // a write was received and not yet acknowledged
	fed     int64               // encoded bytes handed to the decoder
	out     int64               // decoded bytes produced (and emitted)
	limit   int64               // the most decoded bytes emitted; decoding stops there
	err     error               // why decoding stopped early; read after close
}

// encodingOf returns the supported content coding named by a Content-Encoding header value
// ("gzip" or "br"), or "" when the body is not encoded or is encoded some other way (then it is
// measured as it is, and is usually counted malformed).
func encodingOf(v string) string {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "gzip", "x-gzip":
		return "gzip"
	case "br":
		return "br"
	}
	return ""
}

// newInflater starts decoding a body in the given coding ("gzip" or "br"), handing at most
// limit decoded bytes to emit.
func newInflater(coding string, limit int64, emit func([]byte, int64)) *inflater {
	z := &inflater{
		in:     make(chan []byte),
		ack:    make(chan struct{}),
		exited: make(chan struct{}),
		emit:   emit,
		limit:  limit,
	}
	go z.run(coding)
	return z
}

// write hands p, written at time at, to the decoder and waits until it was consumed. The
// decoder keeps no reference to p afterwards.
func (z *inflater) write(p []byte, at int64) {
	if len(p) == 0 {
		return
	}
	z.at = at
	z.in <- p
	<-z.ack
}

// close ends the encoded input, waits for the decoder to finish and reports why decoding
// failed, or nil when the body decoded cleanly or ended early (a cut body is the framer's to
// report as truncated).
func (z *inflater) close() error {
	close(z.in)
	<-z.exited
	return z.err
}

func (z *inflater) run(coding string) {
	defer close(z.exited)
	z.err = z.decode(coding)
	// Decoding stopped: the rest of the body still passes to the client, unmeasured.
	for {
		z.release()
		if _, ok := <-z.in; !ok {
			return
		}
		z.pending = true
	}
}

// decode runs the decoder to the end of the input and returns why it stopped early, if so.
func (z *inflater) decode(coding string) error {
	var r io.Reader
	switch coding {
	case "gzip":
		zr, err := gzip.NewReader(z)
		if err != nil {
			return cleanEOF(err)
		}
		r = zr
	default:
		r = brotli.NewReader(z)
	}
	buf := make([]byte, inflateBuf)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if z.out+int64(n) > z.fed*maxInflateRatio+inflateSlack {
				return errInflateBomb
			}
			if room := z.limit - z.out; int64(n) > room {
				n, err = int(room), errInflateLimit
			}
			if n > 0 {
				z.out += int64(n)
				z.emit(buf[:n], z.at)
			}
		}
		if err != nil {
			return cleanEOF(err)
		}
	}
}

// cleanEOF maps the ends of input that are not decoding failures to nil: the body ended (EOF)
// or was cut (unexpected EOF), which the framer reports.
func cleanEOF(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// release acknowledges the current write, if any: the decoder consumed it.
func (z *inflater) release() {
	if z.pending {
		z.pending = false
		z.ack <- struct{}{}
	}
}

// Read is the decoder's input: the current write, then (after acknowledging it) the next one.
func (z *inflater) Read(p []byte) (int, error) {
	for len(z.cur) == 0 {
		z.release()
		b, ok := <-z.in
		if !ok {
			return 0, io.EOF
		}
		z.cur, z.pending = b, true
	}
	n := copy(p, z.cur)
	z.cur = z.cur[n:]
	z.fed += int64(n)
	return n, nil
}

// Values of the record's decode_stopped: which bound stopped decoding an encoded body.
const (
	DecodeStoppedRatio = "ratio"
	DecodeStoppedSize  = "size"
)

// endInflate stops decoding an encoded body, if one is being decoded: it hands the decoder the
// end of input, lets it frame what it still holds, keeps how much was decoded and counts a
// decoding failure or a decompression bomb as one malformed event (the body still passed to
// the client in full).
func (m *Meter) endInflate() {
	if m.inflate == nil {
		return
	}
	err := m.inflate.close()
	m.decoded = m.inflate.out
	switch {
	case err == errInflateLimit:
		m.decodeStop = DecodeStoppedSize
	case err == errInflateBomb:
		m.decodeStop = DecodeStoppedRatio
		m.inflateFails++
	case err != nil:
		m.inflateFails++
	}
	m.inflate = nil
}
