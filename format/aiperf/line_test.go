package aiperf

import (
	"fmt"
	"testing"
)

// TestAIPerfErrorWithoutDetails reads AIPerf's error that carries no details: at db4f6397
// (inference_result_parser.py, record_models.py ParsedResponseRecord.valid) a 200 whose stream
// held no content is an invalid record with error None, so its line has error_request_count
// and "error": null, and AIPerf counts it in error_request_count. The report must count it as
// an error too (before, it read as a success: an error rate of 0 where AIPerf counted 1).
func TestAIPerfErrorWithoutDetails(t *testing.T) {
	t.Parallel()
	meta := `"session_num":%d,"x_request_id":"r%d","request_start_ns":1760000000000000000,"request_end_ns":1760000000100000000,"worker_id":"w","record_processor_id":"p","benchmark_phase":"profiling"`
	lines := []string{
		`{"metadata":{` + fmt.Sprintf(meta, 0, 0) + `},"metrics":{"request_count":{"value":1,"unit":"requests"},"time_to_first_token":{"value":12.5,"unit":"ms"},"request_latency":{"value":100.0,"unit":"ms"}},"error":null}`,
		`{"metadata":{` + fmt.Sprintf(meta, 1, 1) + `},"metrics":{"error_request_count":{"value":1,"unit":"requests"}},"error":null}`,
	}
	var errs, ok int
	for i, l := range lines {
		r, fromAIPerf, why := ParseLine([]byte(l), "m")
		if r == nil || !fromAIPerf {
			t.Fatalf("line %d: not read as AIPerf's: %s", i, why)
		}
		if r.OK() {
			ok++
		} else {
			errs++
		}
	}
	if ok != 1 || errs != 1 {
		t.Errorf("%d valid, %d errors; AIPerf counted 1 and 1", ok, errs)
	}
}
