package llmtap

import "github.com/prometheus/client_golang/prometheus"

// ResetModelLabels forgets the models the process-wide label set gave series to, so each test
// that loads a config starts with every place free, whatever models the tests before it sent.
// The Prometheus series those tests created stay; tests look only at their own models.
func ResetModelLabels() { modelLabels.Reset() }

// DeleteModelSeries removes the Prometheus series of the given model labels from llmtap's
// process-wide collectors, so a test that created many (long model names) leaves /metrics as
// small for the tests after it as it found it.
func DeleteModelSeries(models ...string) {
	for _, m := range models {
		match := prometheus.Labels{"model": m}
		for _, v := range []*prometheus.MetricVec{metricTTFT.MetricVec, metricTPOT.MetricVec, metricDuration.MetricVec, metricOpDuration.MetricVec,
			metricTokens.MetricVec, metricRequests.MetricVec, metricErrors.MetricVec,
			metricTenantRequests.MetricVec, metricTokensByKind.MetricVec, metricGPUSeconds.MetricVec,
			metricGPUEnergy.MetricVec, metricCost.MetricVec} {
			v.DeletePartialMatch(match)
		}
	}
}

// ResetTenantLabels forgets the tenants the process-wide tenant set gave series to.
func ResetTenantLabels() { tenantLabels.Reset() }
