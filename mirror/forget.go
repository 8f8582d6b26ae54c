package mirror

// Forget gives up the copy expected for the live request id without counting it as unpaired:
// the Mirror cut it itself (a config reload or shutdown), so neither of its records is paired
// and the canary verdict never sees it. It is called before the cut copy's record is submitted.
func (p *Pairer) Forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[id]; ok {
		delete(p.pending, id)
		p.expecting.Store(int64(len(p.pending)))
	}
}
