// Package otlp holds the end-to-end test of llmtap's OpenTelemetry export against a real OTLP
// receiver: the OpenTelemetry Collector's otlpreceiver, run in-process. It is a separate module
// so that the Collector's dependency tree stays out of llmtap's go.mod.
package otlp
