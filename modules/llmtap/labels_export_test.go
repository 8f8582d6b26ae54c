package llmtap

// ResetModelLabels forgets the models the process-wide label set gave series to, so each test
// that loads a config starts with every place free, whatever models the tests before it sent.
// The Prometheus series those tests created stay; tests look only at their own models.
func ResetModelLabels() { modelLabels.Reset() }
