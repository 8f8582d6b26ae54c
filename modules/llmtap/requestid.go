package llmtap

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// Request ids are a per-process random prefix and a counter (proc.idPrefix, proc.idCounter):
// unique, cheap, and sortable by arrival within one process.

func newIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "-"
}

func newRequestID() string {
	buf := make([]byte, 0, len(proc.idPrefix)+12)
	buf = append(buf, proc.idPrefix...)
	buf = strconv.AppendUint(buf, proc.idCounter.Add(1), 10)
	return string(buf)
}
