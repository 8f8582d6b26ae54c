package llmtap_test

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/testkit"
)

// diskFullChildEnv makes the test binary run TestFaultsDiskFull's child: Caddy recording into
// the folder it names, in a process whose files may not grow past a few KiB (the shell's
// `ulimit -f`), so every write past that fails with EFBIG — a full disk as the recorder sees it,
// made without root or a file system of its own.
const diskFullChildEnv = "LLMTAP_DISKFULL_CHILD_DIR"

// diskFullRequests is how many requests the child sends.
const diskFullRequests = 60

// TestFaultsDiskFull is the fault matrix's full disk (issue 19, item 9): the proxy keeps serving
// every request in full, the records that could not be written are counted as dropped with the
// reason write_failed and not as written, and the recorder backs off instead of opening a new
// empty file per failed write.
func TestFaultsDiskFull(t *testing.T) {
	if dir := os.Getenv(diskFullChildEnv); dir != "" {
		diskFullChild(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "rec")
	// 4 blocks of 1 KiB: the first few records fit, every later write fails.
	cmd := exec.Command("sh", "-c", `ulimit -f 4 && exec "$0" "$@"`, os.Args[0], "-test.run=^TestFaultsDiskFull$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), diskFullChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	got := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "diskfull.") {
			n, _ := strconv.Atoi(v)
			got[strings.TrimPrefix(k, "diskfull.")] = n
		}
	}
	t.Logf("child reported %v", got)
	if got["served"] != diskFullRequests {
		t.Errorf("%d of %d requests served in full while the disk was full", got["served"], diskFullRequests)
	}
	if got["write_failed"] == 0 {
		t.Errorf("no record counted as dropped with reason write_failed")
	}
	// A record counts as written once the flush after it succeeded: never more than the
	// records files hold (a failed flush can still have put some whole lines on disk before the
	// limit, which then count as failed), and every measured record is counted exactly once.
	lines := len(recordLines(t, dir))
	if got["written"] > lines {
		t.Errorf("the recorder says %d records written, the records files hold %d: failed writes counted as written", got["written"], lines)
	}
	if got["written"]+got["write_failed"] != diskFullRequests {
		t.Errorf("%d written + %d failed for %d measured: each record must be counted once", got["written"], got["write_failed"], diskFullRequests)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	// Without the back-off each failed write opened a new file (46 in 5 s were seen); with it,
	// a second of backing off holds the count to the first files and a retry or two.
	if len(files) > 8 {
		t.Errorf("%d files in the folder after %d requests on a full disk: no back-off", len(files), diskFullRequests)
	}
}

// diskFullChild serves diskFullRequests requests through Caddy recording into dir, waits for
// the recorder's flush, and prints what it saw as diskfull.<name>=<n> lines.
func diskFullChild(t *testing.T, dir string) {
	up := startUpstream(t, recordingMock())
	p, _ := loadProxy(t, "", recordSite(up.addr, dir, "\t\t\tflush_interval 50ms"))
	c := newClient(t)
	served := 0
	for i := range diskFullRequests {
		resp, body, err := testkit.PostJSON(t.Context(), c, p.sites[0]+"/v1/chat/completions", fmt.Sprintf("full-%d", i),
			[]byte(fmt.Sprintf(`{"model":"rec-model","stream":true,"max_tokens":8,"messages":[{"role":"user","content":%q}]}`, recordedPrompt(i))))
		if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(string(body), "[DONE]") {
			served++
		}
	}
	// Every record has reached the recorder and been flushed (or failed) once the counts stop
	// moving across a few flush intervals.
	var written, failed float64
	for range 100 {
		time.Sleep(100 * time.Millisecond)
		written = float64(recordingWritten(t, p))
		failed = p.metricValue(t, "llmtap_recorder_dropped_total", map[string]string{"reason": "write_failed"})
		if written+failed >= diskFullRequests { // both only grow
			break
		}
	}
	fmt.Printf("diskfull.served=%d\ndiskfull.written=%d\ndiskfull.write_failed=%d\n", served, int(written), int(failed))
}

// recordingWritten reads the configured recorder's written count through the Connect API.
func recordingWritten(t *testing.T, p *proxy) uint64 {
	t.Helper()
	c := llmtapv1connect.NewTapServiceClient(http.DefaultClient, p.admin)
	st, err := c.RecordingStatus(t.Context(), connect.NewRequest(&llmtapv1.RecordingStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, r := range st.Msg.GetRecordings() {
		n += r.GetWritten()
	}
	return n
}
