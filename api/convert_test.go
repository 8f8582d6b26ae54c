package api

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/telemetry/headroom"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
	"github.com/llmtap/llmtap/telemetry/timeline"
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

// fill sets every exported field of the struct v points to a non-zero value: strings, numbers,
// booleans, pointers, slices, maps and nested structs, recursively. Fields without a JSON name
// are left alone (they are never shown).
func fill(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		fillValue(v.Field(i))
	}
}

func fillValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(3)
	case reflect.Uint, reflect.Uint32, reflect.Uint64:
		v.SetUint(3)
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillValue(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillValue(k)
		fillValue(e)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		fill(v)
	}
}

// jsonNames lists the JSON names of t's fields (those of embedded structs inline).
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonNames(f.Type)...)
		case f.IsExported() && name != "-" && name != "":
			out = append(out, name)
		}
	}
	return out
}

// checkAll checks that m has a field for every JSON name of goType (by the same name, or the
// one renamed gives), and that every field of m is set but those named in other (fields that
// come from elsewhere than goType).
func checkAll(t *testing.T, goType reflect.Type, m proto.Message, renamed map[string]string, other ...string) {
	t.Helper()
	fields := m.ProtoReflect().Descriptor().Fields()
	for _, name := range jsonNames(goType) {
		pname := name
		if r, ok := renamed[name]; ok {
			pname = r
		}
		if fields.ByName(protoreflect.Name(pname)) == nil {
			t.Errorf("%s's JSON field %q has no field %q in %s", goType, name, pname, fields.Get(0).ContainingMessage().FullName())
		}
	}
	for i := range fields.Len() {
		if fd := fields.Get(i); !m.ProtoReflect().Has(fd) && !slices.Contains(other, string(fd.Name())) {
			t.Errorf("%s: field %s is not set from a %s whose every field is", fd.ContainingMessage().FullName(), fd.Name(), goType)
		}
	}
}

// TestConvertEveryField: every field a JSON surface shows of a record or a summary usage row
// (and of the record's GPU usage, cost, server timings and time split) has a Connect field, and
// the conversion sets every Connect field from a value whose every field is set. A field added
// to one side only fails here.
func TestConvertEveryField(t *testing.T) {
	var r record.Record
	fill(reflect.ValueOf(&r).Elem())
	p := recordProto(&r)
	checkAll(t, reflect.TypeFor[record.Record](), p, nil)
	checkAll(t, reflect.TypeFor[record.GPUUsage](), p.Gpu, map[string]string{"util_percent": "utilization_percent", "power_w": "power_watts", "energy_j": "energy_joules"})
	checkAll(t, reflect.TypeFor[record.Cost](), p.Cost, nil)
	checkAll(t, reflect.TypeFor[record.ServerTimings](), p.ServerTimings, nil)
	checkAll(t, reflect.TypeFor[record.TimeSplit](), p.TimeSplit, nil)

	var u stats.Usage
	fill(reflect.ValueOf(&u).Elem())
	checkAll(t, reflect.TypeFor[stats.Usage](), usageProto(&u), map[string]string{"gpu_energy_j": "gpu_energy_joules"})

	// GET /llmtap/mirror and GET /llmtap/slo.
	var doc MirrorDoc
	fill(reflect.ValueOf(&doc).Elem())
	m := MirrorStatusProto(doc)
	checkAll(t, reflect.TypeFor[MirrorDoc](), m, nil)
	checkAll(t, reflect.TypeFor[mirror.Counters](), m.Counters, nil)
	checkAll(t, reflect.TypeFor[mirror.GateState](), m.Gate, nil)
	checkAll(t, reflect.TypeFor[mirror.Summary](), m.Pairs, nil)
	checkAll(t, reflect.TypeFor[mirror.ModelSummary](), m.Pairs.Models[0], nil)
	checkAll(t, reflect.TypeFor[mirror.Comparison](), m.Pairs.Models[0].TtftMs, nil)
	checkAll(t, reflect.TypeFor[mirror.ModelVerdict](), m.Verdicts[0], nil)
	checkAll(t, reflect.TypeFor[mirror.MetricVerdict](), m.Verdicts[0].Comparisons[0], nil)
	var rep slo.Report
	fill(reflect.ValueOf(&rep).Elem())
	sp := sloReportProto(&rep)
	checkAll(t, reflect.TypeFor[slo.Report](), sp, map[string]string{"thresholds": "ttft_ms"}) // the thresholds are on the report
	checkAll(t, reflect.TypeFor[slo.Thresholds](), sp, nil)
	checkAll(t, reflect.TypeFor[slo.Window](), sp.Total, nil)
	checkAll(t, reflect.TypeFor[SLODoc](), &llmtapv1.SLOStatusResponse{Reports: []*llmtapv1.SLOReport{sp}, Dropped: 1}, map[string]string{"slos": "reports"})

	// GET /llmtap/shadow's passive_headroom in ShadowStatus.
	var est headroom.Estimate
	fill(reflect.ValueOf(&est).Elem())
	hp := ShadowStateProto(ShadowDoc{PassiveHeadroom: []headroom.Estimate{est}}).PassiveHeadroom[0]
	checkAll(t, reflect.TypeFor[headroom.Estimate](), hp, nil)
	checkAll(t, reflect.TypeFor[headroom.Interval](), hp.SloConcurrency, nil)
	checkAll(t, reflect.TypeFor[headroom.Interval](), hp.RemainingRequestsPerSec, nil)
	checkAll(t, reflect.TypeFor[headroom.Level](), hp.Levels[0], nil)

	// GET /llmtap/timeline's windows in StreamTimeline.
	var w timeline.Window
	fill(reflect.ValueOf(&w).Elem())
	tw := timelineWindowProto(&w, 1)
	checkAll(t, reflect.TypeFor[timeline.Window](), tw, map[string]string{"start_ms": "start", "duration_ms": "duration"}, "shadow")
	checkAll(t, reflect.TypeFor[timeline.Series](), tw.Series[0], map[string]string{"input_tokens_per_second": "input_token_rate", "output_tokens_per_second": "output_token_rate"})
	checkAll(t, reflect.TypeFor[timeline.Quantiles](), tw.Series[0].TtftMs, nil, "mean")
	checkAll(t, reflect.TypeFor[timeline.GPU](), tw.Gpus[0], map[string]string{"util_percent": "utilization_percent", "mem_util_percent": "memory_utilization_percent",
		"power_w": "power_watts", "energy_j": "energy_joules", "mem_used_bytes": "memory_used_bytes", "mem_total_bytes": "memory_total_bytes",
		"temp_c": "temperature_celsius", "mem_clock_mhz": "memory_clock_mhz"})
	checkAll(t, reflect.TypeFor[timeline.Server](), tw.Servers[0], nil)
	checkAll(t, reflect.TypeFor[timeline.ServerLatency](), tw.Servers[0].QueueMs, nil)
	checkAll(t, reflect.TypeFor[timeline.SplitShares](), tw.Servers[0].Split, nil)
}
