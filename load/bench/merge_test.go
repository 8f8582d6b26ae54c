package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/telemetry/stats"
)

// TestMergeSnapshotsRefusesMismatches: workers of different classes or objectives, or the
// same worker twice, do not make one workload; an unreadable or foreign snapshot file is an
// error naming it.
func TestMergeSnapshotsRefusesMismatches(t *testing.T) {
	w0 := Snapshot{Version: snapshotVersion, Class: "bench", Worker: Worker{0, 2}}
	w1 := Snapshot{Version: snapshotVersion, Class: "bench", Worker: Worker{1, 2}}
	if _, _, err := MergeSnapshots([]Snapshot{w0, w1}); err != nil {
		t.Fatalf("two workers of one bench: %v", err)
	}
	replay := w1
	replay.Class = "replay"
	slo := w1
	slo.SLOs = []stats.SLO{{Metric: stats.TagTTFT, Threshold: 100}}
	for name, snaps := range map[string][]Snapshot{
		"classes":    {w0, replay},
		"objectives": {w0, slo},
		"same index": {w0, w1, w0},
		"none":       nil,
	} {
		if _, _, err := MergeSnapshots(snaps); err == nil {
			t.Errorf("%s: merged", name)
		}
	}
	dir := t.TempDir()
	if _, _, err := Merge([]string{dir}, filepath.Join(dir, "out")); err == nil || !strings.Contains(err.Error(), SnapshotFile) {
		t.Errorf("a folder without a snapshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, SnapshotFile), []byte(`{"version": 99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshot(dir); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("a snapshot of another version: %v", err)
	}
}
