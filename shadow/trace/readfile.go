package trace

// ReadSorted reads up to maxN requests (0 = all) of the trace at path, in arrival order. It is
// what `llmtap replay` and the proxy's trace shadow load share.
func ReadSorted(path string, opt Options, maxN int) ([]Request, Info, error) {
	rd, err := Open(path, opt)
	if err != nil {
		return nil, Info{}, err
	}
	defer rd.Close()
	var reqs []Request
	for q, err := range rd.All() {
		if err != nil {
			return nil, rd.Info(), err
		}
		reqs = append(reqs, q)
		// Records are written as requests end, so a file's first N lines need not be its first
		// N arrivals; every other format is in arrival order and can stop early.
		if maxN > 0 && len(reqs) >= maxN && rd.Format() != FormatRecords {
			break
		}
	}
	SortByTime(reqs)
	if maxN > 0 && len(reqs) > maxN {
		reqs = reqs[:maxN]
	}
	return reqs, rd.Info(), nil
}
