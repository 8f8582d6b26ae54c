package aiperf

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// Summary is what llmtap reads of an AIPerf summary, profile_export_aiperf.json, in either of
// its layouts: Commit's and llmtap's (JsonExportData: metrics as top-level members) and
// the older one of AIPerf's example artifacts (metrics under records{}).
type Summary struct {
	// Model is the first of input_config.endpoint.model_names (or its single name); "" when
	// the summary names none.
	Model string
	// Metrics are the members that are AIPerf's JsonMetricResult, by tag: objects with a unit
	// and at least one numeric statistic of stats.AIPerfStatKeys.
	Metrics map[string]Metric
}

// Metric is one metric of a summary: its unit and its statistics by AIPerf's key (avg, p99…);
// a statistic written as null is absent.
type Metric struct {
	Unit   string
	Values map[string]float64
}

// RequestCount is the summary's request_count (valid requests), 0 when it has none.
func (s Summary) RequestCount() float64 { return s.Metrics[stats.TagRequestCount].Values["avg"] }

// ParseSummary reads an AIPerf summary from its JSON.
func ParseSummary(b []byte) (Summary, error) {
	var members, records map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return Summary{}, err
	}
	s := Summary{Metrics: map[string]Metric{}}
	var ic struct {
		Endpoint struct {
			ModelNames json.RawMessage `json:"model_names"`
		} `json:"endpoint"`
	}
	var names []string
	if json.Unmarshal(members["input_config"], &ic) == nil && json.Unmarshal(ic.Endpoint.ModelNames, &names) == nil && len(names) > 0 {
		s.Model = names[0]
	} else {
		json.Unmarshal(ic.Endpoint.ModelNames, &s.Model) // a single name
	}
	if json.Unmarshal(members["records"], &records) == nil && records != nil {
		members = records // the older layout
	}
	for tag, raw := range members {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		unit, ok := m["unit"].(string)
		if !ok {
			continue
		}
		mt := Metric{Unit: unit, Values: map[string]float64{}}
		for _, k := range stats.AIPerfStatKeys() {
			if v, ok := m[k].(float64); ok {
				mt.Values[k] = v
			}
		}
		if len(mt.Values) > 0 {
			s.Metrics[tag] = mt
		}
	}
	return s, nil
}

// ReadSummary reads the AIPerf summary in dir (SummaryJSON); ok is false when there is none.
func ReadSummary(dir string) (s Summary, ok bool, err error) {
	p := filepath.Join(dir, SummaryJSON)
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, err
	}
	if s, err = ParseSummary(b); err != nil {
		return Summary{}, false, fmt.Errorf("%s: %w", p, err)
	}
	return s, true, nil
}
