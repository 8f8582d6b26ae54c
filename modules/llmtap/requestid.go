package llmtap

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// Request ids are a per-process random prefix and a counter: unique, cheap, and sortable by
// arrival within one process.
var (
	idPrefix  = newIDPrefix()
	idCounter atomic.Uint64
)

func newIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

func newRequestID() string {
	buf := make([]byte, 0, len(idPrefix)+12)
	buf = append(buf, idPrefix...)
	buf = strconv.AppendUint(buf, idCounter.Add(1), 10)
	return string(buf)
}
