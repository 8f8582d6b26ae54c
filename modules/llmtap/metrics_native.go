package llmtap

import (
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// NativeHistogramsEnv names the variable that adds Prometheus native histograms to the
// gen_ai_* histograms of /metrics: "on" adds them, "off" or unset leaves the classic buckets
// alone. It is read once, when the process starts, because the collectors are created once per
// process. The classic buckets stay: a scraper that does not ask for native histograms (the
// text formats; Prometheus without --enable-feature=native-histograms) sees what it saw
// before, while a Prometheus with the feature ingests the native histogram instead.
const NativeHistogramsEnv = "LLMTAP_PROMETHEUS_NATIVE_HISTOGRAMS"

const (
	// nativeBucketFactor bounds the growth from one native bucket to the next: 1.1 gives
	// schema 3, eight buckets per power of two, each at most 9.05 % wider than the last.
	nativeBucketFactor = 1.1
	// nativeMaxBuckets bounds the buckets of one series (the OTel SDK's default for base-2
	// exponential histograms is 160 too); past it the resolution halves, and counts are kept.
	nativeMaxBuckets = 160
)

// nativeHistograms reports whether NativeHistogramsEnv is "on"; another value than "on",
// "off" or empty is logged and leaves them off.
var nativeHistograms = func() bool {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(NativeHistogramsEnv))); v {
	case "on":
		return true
	case "", "off":
		return false
	default:
		logger("metrics").Warn("native histograms stay off: the value is neither on nor off",
			zap.String("variable", NativeHistogramsEnv), zap.String("value", v))
		return false
	}
}()

// histogramOpts returns o with native histograms added when NativeHistogramsEnv asks for them.
func histogramOpts(o prometheus.HistogramOpts) prometheus.HistogramOpts {
	if nativeHistograms {
		o.NativeHistogramBucketFactor = nativeBucketFactor
		o.NativeHistogramMaxBucketNumber = nativeMaxBuckets
	}
	return o
}
