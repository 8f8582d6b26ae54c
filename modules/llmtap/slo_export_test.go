package llmtap

// ResetSLO forgets the process-wide SLO tracker's series, so a test sees only its own
// requests.
func ResetSLO() { sloTracker.Reset() }
