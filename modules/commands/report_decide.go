package commands

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/llmtap/llmtap/report"
	"github.com/llmtap/llmtap/telemetry/slo"
	"github.com/llmtap/llmtap/telemetry/stats"
)

// decideFlags are the options of the report's decisions: the canary verdict over the
// run's mirror pairs and the SLO attainment.
type decideFlags struct {
	verdict string
	slos    string
	target  float64
	json    string
}

func (f *decideFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.verdict, "canary-verdict", "", `canary verdict over the run's live/mirror pairs: the handler's mirror.verdict as JSON, e.g. '{"first_look":1000,"looks":1}' (default: its defaults)`)
	fs.StringVar(&f.slos, "slo", "", "SLOs in the --goodput syntax of llmtap bench, e.g. 'time_to_first_token:200 request_latency:2000': attainment per class, model and tenant")
	fs.Float64Var(&f.target, "slo-target", slo.DefaultTarget, "the SLO attainment objective the burn rates are measured against, in (0, 1)")
	fs.StringVar(&f.json, "json", "", "also write the canary verdicts and the SLO attainment to this file as JSON")
}

// options checks the flags and returns the report's decide options.
func (f *decideFlags) options() (report.DecideOptions, error) {
	var o report.DecideOptions
	if f.verdict != "" {
		dec := json.NewDecoder(strings.NewReader(f.verdict))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&o.Verdict); err != nil {
			return o, fmt.Errorf("--canary-verdict %q: %v (want the JSON of mirror.verdict, docs/canary.md)", f.verdict, err)
		}
		if err := o.Verdict.Validate(); err != nil {
			return o, fmt.Errorf("--canary-verdict: %w", err)
		}
	}
	var err error
	if o.SLOs, err = stats.ParseSLOs(f.slos); err != nil {
		return o, fmt.Errorf("--slo: %w", err)
	}
	if !(f.target > 0 && f.target < 1) {
		return o, fmt.Errorf("--slo-target %v: must be a fraction in (0, 1)", f.target)
	}
	o.SLOTarget = f.target
	return o, nil
}

// writeDecisions prints the report's decisions and writes them as JSON when asked to.
func (f *decideFlags) writeDecisions(w io.Writer, d report.Decisions) error {
	d.WriteText(w)
	if f.json == "" {
		return nil
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(f.json, append(b, '\n'), 0o644) // as json.Encoder ends it
}
