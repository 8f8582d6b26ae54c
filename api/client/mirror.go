package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/mirror"
)

// Mirror is the part of the mirror's status (GET /llmtap/mirror, or MirrorStatus) that the
// canary verdict needs.
type Mirror struct {
	Counters mirror.Counters       `json:"counters"`
	Verdicts []mirror.ModelVerdict `json:"verdicts"`
}

// MirrorJSON reads GET /llmtap/mirror from url.
func MirrorJSON(ctx context.Context, c *http.Client, url string) (Mirror, error) {
	var doc Mirror
	b, err := Get(ctx, c, url)
	if err == nil {
		err = json.Unmarshal(b, &doc)
	}
	return doc, err
}

// MirrorStatus reads the Connect API's MirrorStatus.
func MirrorStatus(ctx context.Context, c llmtapv1connect.TapServiceClient) (Mirror, error) {
	res, err := c.MirrorStatus(ctx, connect.NewRequest(&llmtapv1.MirrorStatusRequest{}))
	if err != nil {
		return Mirror{}, fmt.Errorf("MirrorStatus: %w", err)
	}
	doc := Mirror{Counters: api.MirrorCountersFromProto(res.Msg.GetCounters()), Verdicts: []mirror.ModelVerdict{}}
	for _, v := range res.Msg.GetVerdicts() {
		doc.Verdicts = append(doc.Verdicts, api.MirrorVerdictFromProto(v))
	}
	return doc, nil
}

// WaitVerdicts reads the mirror's status with fetch every interval until the model (every
// model when empty) has a verdict (Decided) or ctx ends, and returns the last status read. An
// error of fetch is returned at once, unless ctx ended during the read: then the status read
// before it is returned with a nil error, for the caller to judge.
func WaitVerdicts(ctx context.Context, fetch func(context.Context) (Mirror, error), model string, interval time.Duration) (Mirror, error) {
	var doc Mirror
	for {
		got, err := fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return doc, nil
			}
			return doc, err
		}
		doc = got
		if Decided(doc.Verdicts, model) {
			return doc, nil
		}
		select {
		case <-ctx.Done():
			return doc, nil
		case <-time.After(interval):
		}
	}
}

// Decided reports whether the model (every model when empty) has a verdict other than "not
// enough pairs yet" (inconclusive is final, so decided); no model at all is not decided.
func Decided(vs []mirror.ModelVerdict, model string) bool {
	if model != "" {
		vs = Pick(vs, model)
	}
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		if v.Outcome == mirror.VerdictNotEnough {
			return false
		}
	}
	return true
}

// Pick returns the verdict of model, none when it has none.
func Pick(vs []mirror.ModelVerdict, model string) []mirror.ModelVerdict {
	for _, v := range vs {
		if v.Model == model {
			return []mirror.ModelVerdict{v}
		}
	}
	return nil
}
