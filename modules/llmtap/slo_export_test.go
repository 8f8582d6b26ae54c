package llmtap

// ResetSLO forgets the running process's SLO tracker's series, so a test sees only its own
// requests.
func ResetSLO() {
	if p := running.Load(); p != nil {
		p.SLOTracker.Reset()
	}
}
