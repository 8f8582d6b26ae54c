package decode

// APIUnknown is the API name of responses no decoder understands.
const APIUnknown = "unknown"

// NewUnknown returns the decoder for APIs llmtap does not understand. It only times events:
// every non-empty event is Content (so TTFT is the first event and inter-chunk latency the gaps
// between events), "[DONE]" is Done, and an empty event is Other. It reports no usage, model or
// text, so token counts of such a response fall back to the content-event count, and the
// meter's records say so. A non-empty body is Content.
func NewUnknown() ResponseDecoder {
	d := &unknown{}
	d.Reset()
	return d
}

// unknown is the decoder NewUnknown returns.
type unknown struct {
	res Result
}

// Event implements ResponseDecoder.
func (d *unknown) Event(typ, data []byte) Kind {
	data = trimSpace(data)
	switch {
	case len(data) == 0:
		return Other
	case string(data) == string(done):
		return Done
	}
	d.res.ContentEvents++
	return Content
}

// Body implements ResponseDecoder.
func (d *unknown) Body(body []byte) Kind {
	if len(trimSpace(body)) == 0 {
		return Other
	}
	d.res.ContentEvents++
	return Content
}

// Result implements ResponseDecoder.
func (d *unknown) Result() *Result { return &d.res }

// Reset implements ResponseDecoder.
func (d *unknown) Reset() { d.res = Result{Usage: NoUsage} }

func (d *unknown) apiName() string { return APIUnknown }

func (d *unknown) shrink(int) {}

var _ ResponseDecoder = (*unknown)(nil)
