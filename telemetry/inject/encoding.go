package inject

import (
	"strconv"
	"strings"
)

// Accepted says which kinds of response coding a client's Accept-Encoding header allows.
type Accepted struct {
	// Compressed is true when some coding other than identity is listed without q=0 ("*"
	// included): the server may answer gzip-, br-, zstd-coded, ….
	Compressed bool
	// Identity is true unless the header refuses it: "identity;q=0", or "*;q=0" without
	// identity listed (RFC 9110, section 12.5.3).
	Identity bool
}

// AcceptEncoding reads the values of a request's Accept-Encoding header. No header accepts
// identity only. Anything it cannot read (a malformed q value) counts as accepted, the
// cautious side: a coding the client may be sent is a coding the filter must expect.
//
// Filter reads plain SSE: it cannot read a compressed stream, and removing a chunk from one
// would need the stream decoded and encoded again, which does not give the server's bytes.
// The request body is rewritten before the response, and its coding, exists; so a rewritten
// request must ask the server for identity (see the handler), or not be rewritten when the
// client refuses identity.
func AcceptEncoding(values []string) Accepted {
	a := Accepted{Identity: true}
	identityListed, starRefused := false, false
	for _, v := range values {
		for elem := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(elem, ";")
			coding = strings.TrimSpace(coding)
			no := refused(params)
			switch {
			case coding == "":
			case strings.EqualFold(coding, "identity"):
				identityListed = true
				a.Identity = !no
			case coding == "*":
				starRefused = no
				a.Compressed = a.Compressed || !no
			default:
				a.Compressed = a.Compressed || !no
			}
		}
	}
	if starRefused && !identityListed {
		a.Identity = false
	}
	return a
}

// refused reports whether the parameters of one Accept-Encoding element carry q=0.
func refused(params string) bool {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q == 0
	}
	return false
}
