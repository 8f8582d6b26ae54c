package api

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/llmtap/llmtap/shadow/mirror"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
)

// field reads the field at a dotted path of m ("time_split.proxy_ms"): whether it is present
// (set, for a field with presence: a message or an optional scalar), and its value.
func field(t *testing.T, m proto.Message, path string) (bool, protoreflect.Value) {
	t.Helper()
	msg := m.ProtoReflect()
	names := strings.Split(path, ".")
	for i, name := range names {
		fd := msg.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			t.Fatalf("%s: no field %q in %s", path, name, msg.Descriptor().FullName())
		}
		if !fd.HasPresence() {
			t.Fatalf("%s: field %q has no presence: absent and 0 cannot be told apart", path, name)
		}
		if !msg.Has(fd) {
			return false, protoreflect.Value{}
		}
		if i == len(names)-1 {
			return true, msg.Get(fd)
		}
		msg = msg.Get(fd).Message()
	}
	return false, protoreflect.Value{}
}

func ptr(v float64) *float64 { return &v }

// TestConvertUnknownStaysUnknown converts records, verdicts, SLO reports and mirror counters
// whose figures are unknown (nil in Go, null or absent in the JSON routes) and known to be
// zero: an unknown figure must be absent from the Connect message, never a 0, and a known 0
// must be present.
func TestConvertUnknownStaysUnknown(t *testing.T) {
	bare := &record.Record{Model: "m", Class: record.ClassLive}
	zeroSplit := &record.Record{Model: "m", Class: record.ClassLive, TTFTMs: ptr(0),
		Split:  &record.TimeSplit{ConnectMs: ptr(0), UpstreamTTFTMs: ptr(12), QueueMs: ptr(0), QueueSource: record.SplitServer},
		GPU:    &record.GPUUsage{},
		Cost:   &record.Cost{Basis: "gpu_hour"},
		Server: &record.ServerTimings{Format: "tgi"}}
	unbounded := &mirror.ModelVerdict{Model: "m", Verdict: mirror.Verdict{Comparisons: []mirror.MetricVerdict{
		{Name: "ttft_ms p99", Estimate: math.Inf(1), Low: math.Inf(-1), High: math.Inf(1)},
		{Name: "ttft_ms p50", Estimate: 1, Low: 0, High: 2},
	}}}
	burn := 0.0
	noRequests := &slo.Report{SLO: "s", Model: "m", Thresholds: slo.Thresholds{TTFTMs: 100}, Windows: []slo.Window{{Window: "5m0s"}}}
	allMet := &slo.Report{SLO: "s", Model: "m", Thresholds: slo.Thresholds{LatencyMs: 500},
		Total: slo.Window{Requests: 3, Good: 3, Attainment: map[string]float64{slo.ObjAll: 1}, BurnRate: &burn}}
	sampledNone := MirrorStatusProto(MirrorDoc{})
	sampled := MirrorStatusProto(MirrorDoc{Counters: mirror.Counters{Sampled: 4, Sent: 3, Skipped: map[string]uint64{mirror.SkipOverCap: 1}}})

	for _, tc := range []struct {
		name    string
		msg     proto.Message
		path    string
		present bool
		want    float64 // the value when present (a number field), or NaN to skip
	}{
		{"record without figures: ttft", recordProto(bare), "ttft_ms", false, 0},
		{"record without figures: gpu", recordProto(bare), "gpu", false, 0},
		{"record without figures: cost", recordProto(bare), "cost", false, 0},
		{"record without figures: server timings", recordProto(bare), "server_timings", false, 0},
		{"record without figures: time split", recordProto(bare), "time_split", false, 0},
		{"ttft of 0 is known", recordProto(zeroSplit), "ttft_ms", true, 0},
		{"gpu usage of zeros is known", recordProto(zeroSplit), "gpu", true, math.NaN()},
		{"cost of 0 is known", recordProto(zeroSplit), "cost", true, math.NaN()},
		{"server timings", recordProto(zeroSplit), "server_timings", true, math.NaN()},
		{"connect of 0 (a reused connection) is known", recordProto(zeroSplit), "time_split.connect_ms", true, 0},
		{"upstream ttft", recordProto(zeroSplit), "time_split.upstream_ttft_ms", true, 12},
		{"queue of 0 reported by the server", recordProto(zeroSplit), "time_split.queue_ms", true, 0},
		{"proxy time not known", recordProto(zeroSplit), "time_split.proxy_ms", false, 0},
		{"prefill not reported", recordProto(zeroSplit), "time_split.prefill_ms", false, 0},
		{"server ttft not reported", recordProto(zeroSplit), "time_split.server_ttft_ms", false, 0},
		{"network not known", recordProto(zeroSplit), "time_split.network_ms", false, 0},
		{"unbounded estimate", verdictProto(unbounded).Comparisons[0], "estimate", false, 0},
		{"unbounded low", verdictProto(unbounded).Comparisons[0], "low", false, 0},
		{"unbounded high", verdictProto(unbounded).Comparisons[0], "high", false, 0},
		{"bounded low of 0", verdictProto(unbounded).Comparisons[1], "low", true, 0},
		{"bounded high", verdictProto(unbounded).Comparisons[1], "high", true, 2},
		{"burn rate without requests", sloReportProto(noRequests).Windows[0], "burn_rate", false, 0},
		{"burn rate of 0 (every request met)", sloReportProto(allMet).Total, "burn_rate", true, 0},
		{"threshold set", sloReportProto(noRequests), "ttft_ms", true, 100},
		{"threshold not set", sloReportProto(noRequests), "latency_ms", false, 0},
		{"skipped share before any sample", sampledNone.Counters, "skipped_share", false, 0},
		{"skipped share", sampled.Counters, "skipped_share", true, 0.25},
		{"gate never changed", sampledNone.Gate, "since", false, 0},
	} {
		present, v := field(t, tc.msg, tc.path)
		if present != tc.present {
			t.Errorf("%s: %s present %v, want %v", tc.name, tc.path, present, tc.present)
			continue
		}
		if present && !math.IsNaN(tc.want) && v.Float() != tc.want {
			t.Errorf("%s: %s = %v, want %v", tc.name, tc.path, v.Float(), tc.want)
		}
	}
	if a := sloReportProto(noRequests).Windows[0].Attainment; len(a) != 0 {
		t.Errorf("attainment without requests %v, want none (not 0)", a)
	}
}
