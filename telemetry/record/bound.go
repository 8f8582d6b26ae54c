package record

import "github.com/llmtap/llmtap/telemetry/labelcap"

// Bounds on the strings a record keeps, in bytes. Every one of them can come from a client or
// an upstream (a header, a request body, a response event); without a bound, a thousand model
// names of 500 KB held in the recent-records ring cost gigabytes.
const (
	MaxLabelLen   = labelcap.MaxLen // model, request model, finish reason, API
	MaxIDLen      = 256             // request id
	MaxPathLen    = 1024            // URL path
	MaxMessageLen = 1024            // error message
)

// BoundStrings shortens every client- or upstream-supplied string of r past its bound, with the
// rule of telemetry/labelcap: the start of the value, "~" and a hash of the whole, so two long
// values never merge. Strings within their bounds, and valid UTF-8, are left untouched.
func (r *Record) BoundStrings() {
	r.Model = labelcap.Shorten(r.Model)
	r.RequestModel = labelcap.Shorten(r.RequestModel)
	r.Finish = labelcap.Shorten(r.Finish)
	r.API = labelcap.Shorten(r.API)
	r.RequestID = labelcap.ShortenTo(r.RequestID, MaxIDLen)
	r.Path = labelcap.ShortenTo(r.Path, MaxPathLen)
	r.ErrorMsg = labelcap.ShortenTo(r.ErrorMsg, MaxMessageLen)
	r.SessionID = labelcap.ShortenTo(r.SessionID, MaxIDLen)
}
