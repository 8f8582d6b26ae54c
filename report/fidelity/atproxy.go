package fidelity

import (
	"context"
	"fmt"
	"time"

	"github.com/llmtap/llmtap/telemetry/record"
)

// MinFound is the least share of a replay's requests that must be found in an llmtap proxy's
// records for the proxy's side to stand for the replay (a recorder under load sheds some
// records: they are counted, and a few missing do not bias the rest).
const MinFound = 0.95

// AtProxy finds the replayed requests in the records of an llmtap proxy, so that the replay
// is judged as measured where the recording was, by the same meter. The replay sends each
// request's id as X-Request-Id and the proxy's recorder keeps it (request_id): the proxy's
// records whose ids are the replay's are the replay's requests, timed at the proxy.
//
// load reads the proxy's records (the recording folder when the replay went through the proxy
// that recorded it). The proxy's recorder writes a record when its request ends and flushes
// at least every second by default, so load is called again after poll (longer than the
// recorder's flush) while some replayed requests are still missing and the call before found
// fewer, for at most wait: a replay that did not go through the proxy costs one poll.
//
// It returns the replayed side measured at the proxy (Where "proxy", in the replay's order of
// arrival) and ok when at least MinFound of the replayed requests with an id were found; the
// note says what was found, for the verdict's first line. Without ok, the replayed side is
// returned unchanged and the note says why.
func AtProxy(ctx context.Context, replayed Side, load func() ([]*record.Record, error), wait, poll time.Duration) (side Side, ok bool, note string, err error) {
	ids := make(map[string]bool, len(replayed.Records))
	for _, r := range replayed.Records {
		if r.RequestID != "" {
			ids[r.RequestID] = true
		}
	}
	if len(ids) == 0 {
		return replayed, false, "the replay's records carry no request ids", nil
	}
	deadline := time.Now().Add(wait)
	var found map[string]*record.Record
	for {
		recs, err := load()
		if err != nil {
			return replayed, false, "", err
		}
		now := map[string]*record.Record{}
		for _, r := range recs {
			if ids[r.RequestID] && now[r.RequestID] == nil {
				now[r.RequestID] = r
			}
		}
		grew := found == nil || len(now) > len(found)
		found = now
		if len(found) == len(ids) || !grew || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return replayed, false, "", ctx.Err()
		case <-time.After(poll):
		}
	}
	if float64(len(found)) < MinFound*float64(len(ids)) {
		return replayed, false, fmt.Sprintf("%d of the replay's %d requests found in the proxy's records (fewer than %.0f %%)", len(found), len(ids), 100*MinFound), nil
	}
	side = Side{Name: replayed.Name, Where: "proxy", HashIDs: replayed.HashIDs}
	side.Note = fmt.Sprintf("the replay's %d of %d requests as the llmtap proxy it went through recorded them, found by request id", len(found), len(replayed.Records))
	for _, r := range replayed.Records {
		if p := found[r.RequestID]; p != nil {
			side.Records = append(side.Records, p)
		}
	}
	return side, true, side.Note, nil
}
