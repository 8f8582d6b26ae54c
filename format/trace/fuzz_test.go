package trace

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// seedLines adds the first lines of a shared trace (when present) to a fuzz corpus, so the
// fuzzer starts from the real format.
func seedLines(f *testing.F, rel string, n int) {
	file, err := os.Open(filepath.Join(sharedTraces, rel))
	if err != nil {
		return
	}
	defer file.Close()
	var buf bytes.Buffer
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		buf.Write(sc.Bytes())
		buf.WriteByte('\n')
	}
	f.Add(buf.Bytes())
}

// checkRead reads data in format and checks what must hold for any input: no panic, errors
// carry a position inside the input, counts and (for offset formats) times are non-negative,
// and whatever was read writes as Mooncake and reads back the same.
func checkRead(t *testing.T, data []byte, format Format) {
	rd, err := NewReader(bytes.NewReader(data), Options{Name: "fuzz", Format: format, MaxLineBytes: 1 << 16})
	lines := bytes.Count(data, []byte("\n")) + 1
	checkErr := func(err error) {
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > lines || pe.File != "fuzz" {
			t.Fatalf("error without a valid position (%d lines): %#v", lines, err)
		}
	}
	if err != nil {
		checkErr(err)
		return
	}
	var reqs []Request
	for r, err := range rd.All() {
		if err != nil {
			checkErr(err)
			break
		}
		if r.InputLength < 0 || r.OutputLength < 0 || r.Delay < 0 || r.Latency < 0 {
			t.Fatalf("negative field: %+v", r)
		}
		if r.Timestamp < 0 && rd.Format() != FormatAzure && rd.Format() != FormatRecords {
			t.Fatalf("negative timestamp in an offset format: %+v", r)
		}
		reqs = append(reqs, r)
	}
	SortByTime(reqs)
	Rebase(reqs)
	_ = summarize(reqs)
	var out bytes.Buffer
	w := NewMooncakeWriter(&out, WriterOptions{})
	for _, r := range reqs {
		if err := w.Write(r); err != nil {
			t.Fatalf("writing %+v: %v", r, err)
		}
	}
	w.Flush()
	back, err := NewReader(&out, Options{Format: FormatMooncake})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for b, err := range back.All() {
		if err != nil {
			t.Fatalf("reading back our own output: %v\n%s", err, out.String())
		}
		r := reqs[i]
		if b.Timestamp != r.Timestamp || b.InputLength != r.InputLength || b.OutputLength != r.OutputLength || !slices.Equal(b.HashIDs, r.HashIDs) {
			t.Fatalf("round trip changed request %d: %+v → %+v", i, r, b)
		}
		i++
	}
	if i != len(reqs) {
		t.Fatalf("read back %d of %d requests", i, len(reqs))
	}
}

func FuzzMooncake(f *testing.F) {
	seedLines(f, "mooncake/conversation_trace.jsonl", 3)
	seedLines(f, "mooncake/synthetic_trace.jsonl", 2)
	f.Add([]byte(`{"timestamp": 3052.5, "input_length": 7322.0, "output_length": 490, "hash_ids": [0, 14], "session_id": "s", "delay": 1}` + "\n" + `{"timestamp": 1`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, FormatMooncake)
		checkRead(t, data, FormatAuto)
	})
}

func FuzzAzure(f *testing.F) {
	seedLines(f, "azure2023/AzureLLMInferenceTrace_code.csv", 4)
	f.Add([]byte("\ufeffTIMESTAMP,ContextTokens,GeneratedTokens\r\n2024-05-12 00:00:00+00:00,1,2\r\n2024-05-12T00:00:00.001163Z,3,4"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, FormatAzure)
		checkRead(t, data, FormatAuto)
	})
}

func FuzzBurstGPT(f *testing.F) {
	seedLines(f, "burstgpt/BurstGPT_1_head400.csv", 4)
	seedLines(f, "burstgpt/BurstGPT_3_slice400.csv", 4)
	f.Add([]byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,\"Chat\"\"GPT, x\",472,0,490,API log\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, FormatBurstGPT)
		checkRead(t, data, FormatAuto)
	})
}

func FuzzRecords(f *testing.F) {
	f.Add([]byte(`{"request_id":"a","class":"live","model":"m","path":"/v1/chat/completions","error":"","start":"2025-01-01T00:00:01.123456789Z","input_tokens":10,"output_tokens":5,"request_latency_ms":12.5,"ttft_ms":null,"inter_chunk_ms":[1.5,2]}` + "\n" +
		`{"request_id":"b","start":"2025-01-01T00:00:00Z","input_tokens":7,"output_tokens":0,"error":"http_status","request_latency_ms":null}` + "\n"))
	f.Add([]byte(`{"request_id":"a","start":"2025-01-01T00:00:00Z","session_id":"s","duration_ms":100}` + "\n" +
		`{"request_id":"b","start":"2025-01-01T00:00:00.4Z","session_id":"s","duration_ms":1e3}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, FormatRecords)
		checkRead(t, data, FormatAuto)
	})
}

func FuzzPayloads(f *testing.F) {
	f.Add([]byte(`{"timestamp_ms": 1523.25, "request_id": "r", "path": "/v1/chat/completions", "payload": {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}}` + "\n" +
		`{"timestamp_ms": 2000, "output_tokens": 3, "payload": {"model": "m", "max_completion_tokens": 9}}`))
	f.Add([]byte(`{"timestamp_ms": 3, "payload_b64": "eyJtb2RlbCI6Im0iLCJwIjoi/yJ9"}` + "\n"))
	f.Add([]byte(`{"timestamp_ms": 4, "session_id": "s", "delay_ms": 250.5, "payload": {"model": "m"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRead(t, data, FormatPayloads)
		checkRead(t, data, FormatAuto)
	})
}
