package trace

import (
	"fmt"
	"unsafe"
)

// ReadFile reads a whole trace file, in the file's order.
func ReadFile(path string, opt Options) ([]Request, Info, error) { return readFile(path, opt, 0) }

// ReadSorted reads up to maxN requests (0 = all) of the trace at path, in arrival order. It is
// what `llmtap replay` and the proxy's trace shadow load share.
func ReadSorted(path string, opt Options, maxN int) ([]Request, Info, error) {
	reqs, info, err := readFile(path, opt, maxN)
	if err != nil {
		return nil, info, err
	}
	SortByTime(reqs)
	if maxN > 0 && len(reqs) > maxN {
		reqs = reqs[:maxN]
	}
	return reqs, info, nil
}

// readFile reads the trace at path in the file's order, within the memory budget, stopping
// after maxN requests (0 = all) unless the file holds records: records are written as
// requests end, so a file's first N lines need not be its first N arrivals, while every other
// format is in arrival order and can stop early. On an error it returns what it read before.
func readFile(path string, opt Options, maxN int) ([]Request, Info, error) {
	rd, err := Open(path, opt)
	if err != nil {
		return nil, Info{Name: path, Format: opt.Format}, err
	}
	defer rd.Close()
	var reqs []Request
	var mem memBudget
	for q, err := range rd.All() {
		if err == nil {
			err = mem.add(rd, &q)
		}
		if err != nil {
			return reqs, rd.Info(), err
		}
		reqs = append(reqs, q)
		if maxN > 0 && len(reqs) >= maxN && rd.Format() != FormatRecords {
			break
		}
	}
	return reqs, rd.Info(), nil
}

// memBudget adds up the memory of the requests of a trace read whole, against
// limits.MaxTraceMemory (Options.MaxMemory when set).
type memBudget struct{ used int64 }

// requestSize is what a Request holds apart from its variable parts.
const requestSize = int64(unsafe.Sizeof(Request{}))

// footprint is the memory one decoded request takes.
func footprint(q *Request) int64 {
	return requestSize + 8*int64(cap(q.HashIDs)) + int64(len(q.SessionID)+len(q.Model)+len(q.Path)+len(q.Class)+cap(q.Payload))
}

// add counts q and fails, naming the line and the limit, once the total passes it.
func (m *memBudget) add(rd *Reader, q *Request) error {
	limit := rd.maxMem
	m.used += footprint(q)
	if m.used > limit {
		return at(rd.info.Name, rd.lr.line, fmt.Errorf("the trace's requests take more than %d MiB in memory up to here (limits.MaxTraceMemory): read fewer (--max-requests) or split the file", limit>>20))
	}
	return nil
}

// ReadRebased reads the whole trace at path as a replayer schedules it: in arrival order
// (ReadSorted, since records are written in completion order), rebased to start at zero
// (Rebase), with synthetic hash ids for the requests that have a prompt and none
// (SynthesizeMissing, whose count it returns).
func ReadRebased(path string, opt Options) (reqs []Request, info Info, synthesized int, err error) {
	if reqs, info, err = ReadSorted(path, opt, 0); err != nil {
		return nil, info, 0, err
	}
	Rebase(reqs)
	return reqs, info, SynthesizeMissing(reqs), nil
}
