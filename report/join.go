package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/llmtap/llmtap/report/fidelity"
	"github.com/llmtap/llmtap/telemetry/record"
	"github.com/llmtap/llmtap/telemetry/timeline"
)

// Side is the run as the fidelity verdict takes it, with where its records were measured: at
// the proxy (its recorder's records-*.jsonl, or the demo's records.jsonl) or at the client (a
// bench, replay or AIPerf export, profile_export.jsonl).
func (run *Run) Side() fidelity.Side {
	where := "proxy"
	for _, f := range run.Files {
		if filepath.Base(f) == "profile_export.jsonl" {
			where = "client"
		}
	}
	return fidelity.Side{Name: run.Name, Where: where, Records: run.Records}
}

// Join loads the runs at paths and joins them into one (a recording written in several
// folders or files), keeping one class when class is set; a run's skipped lines are reported
// to warn. Runs measured at different places (the proxy, the client) are not joined.
func Join(paths []string, class string, warn io.Writer) (*Run, error) {
	var all *Run
	for _, p := range paths {
		run, err := Load(p)
		if err != nil {
			return nil, fmt.Errorf("reading run: %w", err)
		}
		if class != "" {
			if err := run.Only(class); err != nil {
				return nil, err
			}
		}
		if run.Skipped > 0 {
			fmt.Fprintf(warn, "%s: %d lines skipped: %s\n", p, run.Skipped, strings.Join(run.Warnings, "; "))
		}
		if all == nil {
			all = run
			continue
		}
		if a, b := all.Side().Where, run.Side().Where; a != b {
			return nil, fmt.Errorf("%s: measured at the %s, the runs before it at the %s: join runs measured at one place", p, b, a)
		}
		all.Name += " + " + run.Name
		all.Files = append(all.Files, run.Files...)
		all.Records = append(all.Records, run.Records...)
		all.Timeline = append(all.Timeline, run.Timeline...)
		all.Skipped += run.Skipped
	}
	if all == nil {
		return nil, errors.New("no run given")
	}
	slices.SortStableFunc(all.Records, func(a, b *record.Record) int { return a.Start.Compare(b.Start) })
	slices.SortStableFunc(all.Timeline, func(a, b timeline.Window) int { return a.Start.Compare(b.Start) })
	return all, nil
}

// ReplayedAtProxy is the replay's side as the llmtap proxy it went through measured it, when
// the records at paths hold its requests (fidelity.AtProxy, waiting up to 10 s for the proxy's
// recorder to flush); otherwise the client's side, with a note saying why.
func ReplayedAtProxy(ctx context.Context, rep fidelity.Side, paths []string) (fidelity.Side, error) {
	load := func() ([]*record.Record, error) {
		var all []*record.Record
		for _, p := range paths {
			run, err := Load(p)
			if err != nil {
				return nil, err
			}
			all = append(all, run.Records...)
		}
		return all, nil
	}
	at, ok, note, err := fidelity.AtProxy(ctx, rep, load, 10*time.Second, 1500*time.Millisecond)
	if err != nil {
		return rep, fmt.Errorf("reading the records of the proxy the replay went through: %w", err)
	}
	if !ok {
		rep.Note = note
		return rep, nil
	}
	return at, nil
}
