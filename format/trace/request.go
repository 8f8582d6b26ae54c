package trace

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// BlockTokens is the number of prompt tokens one hash id stands for in Mooncake traces and in
// AIPerf's mooncake_trace replay (its default block size).
const BlockTokens = 512

// Request is one request of a trace, whatever format it was read from. Fields a format does not
// carry are zero.
type Request struct {
	// Timestamp is the arrival offset from the trace's zero (see the package documentation).
	Timestamp time.Duration
	// InputLength and OutputLength are prompt and generated tokens. For a trace that records
	// a limit rather than a count (a payload's max_tokens), OutputLength is the limit.
	InputLength, OutputLength int
	// HashIDs are the prompt's prefix blocks of BlockTokens tokens; each id stands for its
	// block and every block before it.
	HashIDs []int64
	// SessionID groups the turns of a conversation; Delay is the wait after the previous turn.
	SessionID string
	Delay     time.Duration
	// Model, Path and Class are what the recording knew about the request: the model named in
	// it, the URL path it was sent to, and llmtap's traffic class.
	Model, Path, Class string
	// Failed marks a request the source recorded as failed (BurstGPT zero-token responses,
	// records with an error class).
	Failed bool
	// Latency is the end-to-end time the source measured, when it did.
	Latency time.Duration
	// Payload is the verbatim request body, for payload files only.
	Payload []byte
}

// Format names a trace file format.
type Format string

// Trace formats. The zero value detects the format from the file.
const (
	FormatAuto     Format = ""
	FormatMooncake Format = "mooncake"
	FormatRecords  Format = "records"
	FormatPayloads Format = "payloads"
	FormatAzure    Format = "azure"
	FormatBurstGPT Format = "burstgpt"
)

// Formats lists the formats a reader understands, for flag help and validation.
var Formats = []Format{FormatMooncake, FormatRecords, FormatPayloads, FormatAzure, FormatBurstGPT}

// ParseFormat turns a user-supplied name ("auto" or one of Formats) into a Format.
func ParseFormat(s string) (Format, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || s == "auto" {
		return FormatAuto, nil
	}
	if slices.Contains(Formats, Format(s)) {
		return Format(s), nil
	}
	return "", fmt.Errorf("unknown trace format %q (want auto, mooncake, records, payloads, azure or burstgpt)", s)
}

// String returns the format's name, "auto" for the zero value.
func (f Format) String() string {
	if f == FormatAuto {
		return "auto"
	}
	return string(f)
}

// Set parses s into f (ParseFormat), so that a *Format is a flag.Value.
func (f *Format) Set(s string) error {
	v, err := ParseFormat(s)
	if err == nil {
		*f = v
	}
	return err
}

// jsonl reports whether the format is one JSON object per line, where a torn last line is a
// crash to tolerate rather than corruption.
func (f Format) jsonl() bool {
	return f == FormatMooncake || f == FormatRecords || f == FormatPayloads
}

// SortByTime orders requests by Timestamp, keeping the file order of equal timestamps (which is
// how replayers and Stats treat simultaneous arrivals).
func SortByTime(reqs []Request) {
	slices.SortStableFunc(reqs, func(a, b Request) int {
		switch {
		case a.Timestamp < b.Timestamp:
			return -1
		case a.Timestamp > b.Timestamp:
			return 1
		}
		return 0
	})
}
