package otlp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmtap/llmtap/mock"
)

// TestFleetLogs runs three llmtap processes (each its own OpenTelemetry SDK, no
// service.instance.id given) that record every request to their own records file and export
// each as an OTLP log record to one Collector receiver. When the processes have stopped
// (SIGINT: Caddy's graceful stop drains the pipeline and flushes the export), every request of
// every instance's file arrived exactly once, field for field (checkLogRecords), under the
// resource of the instance that served it: three distinct service.instance.id values, each
// holding exactly its own instance's requests.
func TestFleetLogs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := mock.DefaultConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	mockURL := startMock(t, cfg)
	rcv := startReceiver(t)
	env := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + rcv.grpcAddr,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_TRACES_EXPORTER=none",
		"OTEL_LOGS_EXPORTER=otlp",
		"OTEL_BLRP_SCHEDULE_DELAY=100",
		"OTEL_SERVICE_NAME=" + fleetJob,
		"OTEL_RESOURCE_ATTRIBUTES=",
	}
	dirs := make([]string, len(fleetStreams))
	insts := make([]*instance, len(fleetStreams))
	for i := range insts {
		insts[i] = startInstanceWith(t, self, env, strings.TrimPrefix(mockURL, "http://"), func(dir string) string {
			dirs[i] = filepath.Join(dir, "records")
			return fmt.Sprintf("llmtap {\n\t\trecord %s {\n\t\t\tfiles records\n\t\t}\n\t}", dirs[i])
		})
	}
	for i, in := range insts {
		sendLogStreams(t, "http://"+in.site, fmt.Sprintf("inst%d", i), fleetStreams[i])
	}
	for _, in := range insts {
		in.stop(t)
	}
	file := map[string]map[string]any{}
	owner := map[string]int{} // request id → instance
	total := 0
	for i, dir := range dirs {
		f := recordsFile(t, dir)
		if len(f) != fleetStreams[i] {
			t.Errorf("instance %d recorded %d requests, it served %d", i, len(f), fleetStreams[i])
		}
		for id, rec := range f {
			file[id], owner[id] = rec, i
		}
		total += fleetStreams[i]
	}
	waitFor(t, "a log record per recorded request", func() bool { return rcv.logs.LogRecordCount() >= total })
	all := rcv.logs.AllLogs()
	logs := receivedLogs(t, all)
	checkLogRecords(t, file, logs)
	// Which instance each log record came from: its resource's service.instance.id.
	byInstance := map[string]map[int]int{} // service.instance.id → instance → requests
	for _, ld := range all {
		for i := range ld.ResourceLogs().Len() {
			rl := ld.ResourceLogs().At(i)
			rid, _ := rl.Resource().Attributes().Get("service.instance.id")
			for j := range rl.ScopeLogs().Len() {
				lrs := rl.ScopeLogs().At(j).LogRecords()
				for k := range lrs.Len() {
					id, ok := lrs.At(k).Attributes().Get("llmtap.request_id")
					if !ok {
						continue
					}
					if byInstance[rid.Str()] == nil {
						byInstance[rid.Str()] = map[int]int{}
					}
					byInstance[rid.Str()][owner[id.Str()]]++
				}
			}
		}
	}
	if len(byInstance) != len(insts) {
		t.Errorf("log records under %d service.instance.id values, want %d: %v", len(byInstance), len(insts), byInstance)
	}
	for rid, counts := range byInstance {
		if len(counts) != 1 {
			t.Errorf("service.instance.id %s holds requests of several instances: %v", rid, counts)
			continue
		}
		for i, n := range counts {
			if n != fleetStreams[i] || (insts[i].id != "" && insts[i].id != rid) {
				t.Errorf("service.instance.id %s holds %d requests of instance %d (logged id %s), want its %d", rid, n, i, insts[i].id, fleetStreams[i])
			}
		}
	}
	t.Logf("%d requests from %d instances arrived as log records, field for field: %v", len(logs), len(insts), byInstance)
}

// stop stops the instance by its PID as the fleet tests do when they end (SIGINT, Caddy's
// graceful stop), and waits until its log says it exited.
func (in *instance) stop(t *testing.T) {
	t.Helper()
	if in.cmd == nil || in.cmd.Process == nil {
		t.Fatal("instance has no process")
	}
	if err := in.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("instance %s did not exit 30 s after SIGINT", in.site)
	}
}
