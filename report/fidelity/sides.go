package fidelity

import (
	"fmt"
	"io"
	"slices"

	"github.com/llmtap/llmtap/format/trace"
	"github.com/llmtap/llmtap/telemetry/record"
)

// Compare judges the replayed side against the recorded one and writes the verdict under a line
// that names both. Two runs neither of which is a replay (two benchmarks) are named first and
// second instead of recorded and replayed; the verdict's rules are the same.
func Compare(w io.Writer, rec, rep Side, o Options) error {
	v := Judge(rec, rep, o)
	if !Replayed(rep) {
		fmt.Fprintf(w, "comparison of %s to %s (neither is a replay: the fidelity verdict's rules)\n", rep.Name, rec.Name)
		v.Labels = [2]string{"first", "second"}
		return v.Write(w)
	}
	fmt.Fprintf(w, "fidelity of %s (replayed) to %s (recorded)\n", rep.Name, rec.Name)
	return v.Write(w)
}

// Replayed reports whether a side holds a replay: records of class replay (a replay's export
// or a proxy's records of replayed requests) or a proxy's recording (the side a replay is
// compared at when it went through the proxy).
func Replayed(s Side) bool {
	if s.Where == "proxy" || s.Note != "" {
		return true
	}
	return slices.ContainsFunc(s.Records, func(r *record.Record) bool { return r.Class == record.ClassReplay })
}

// TraceHashIDs reads a trace's hash ids in time order, for Side.HashIDs; a trace without any
// is an error.
func TraceHashIDs(path string) ([][]int64, error) {
	reqs, _, err := trace.ReadSorted(path, trace.Options{}, 0)
	if err != nil {
		return nil, err
	}
	ids := make([][]int64, len(reqs))
	has := false
	for i := range reqs {
		ids[i] = reqs[i].HashIDs
		has = has || len(ids[i]) > 0
	}
	if !has {
		return nil, fmt.Errorf("%s has no hash_ids", path)
	}
	return ids, nil
}
