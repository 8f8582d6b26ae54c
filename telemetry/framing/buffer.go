package framing

// DefaultMaxEvent is the limit on one event's data (SSE) or one line (NDJSON) that a constructor
// uses when it is given a limit <= 0: 1 MiB. LLM stream chunks are a few hundred bytes, so this
// only ever cuts off a malformed or hostile stream, while bounding what one stream can make the
// proxy hold.
const DefaultMaxEvent = 1 << 20

// minBufCap is the first capacity given to an internal buffer, so that short events do not grow
// a buffer one small step at a time.
const minBufCap = 64

// newline is the separator appended between SSE data lines.
var newline = []byte{'\n'}

// appendBounded appends src to dst like append, except that it never grows dst's capacity beyond
// limit: the built-in append may over-allocate by up to 2x, which would break the framers' memory
// bound. The caller guarantees len(dst)+len(src) <= limit.
func appendBounded(dst, src []byte, limit int) []byte {
	n := len(dst) + len(src)
	if n > cap(dst) {
		c := max(2*cap(dst), n, minBufCap)
		c = min(c, limit)
		grown := make([]byte, len(dst), c)
		copy(grown, dst)
		dst = grown
	}
	return append(dst, src...)
}

// limitOrDefault returns limit, or DefaultMaxEvent when limit is not positive.
func limitOrDefault(limit int) int {
	if limit <= 0 {
		return DefaultMaxEvent
	}
	return limit
}
