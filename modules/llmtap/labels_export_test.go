package llmtap

// ResetModelLabels forgets the models the process-wide label set gave series to, so each test
// that loads a config starts with every place free, whatever models the tests before it sent.
// The Prometheus series those tests created stay; tests look only at their own models.
func ResetModelLabels() { modelLabels.Reset() }

// DeleteModelSeries removes the Prometheus series of the given model labels from llmtap's
// process-wide collectors, so a test that created many (long model names) leaves /metrics as
// small for the tests after it as it found it.
func DeleteModelSeries(models ...string) {
	for _, m := range models {
		requestMetrics.DeleteModel(m)
	}
}
