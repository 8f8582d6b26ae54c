package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ollamaFinal is the part of Ollama's final object the tests read.
type ollamaFinal struct {
	Done               bool   `json:"done"`
	DoneReason         string `json:"done_reason"`
	TotalDuration      int64  `json:"total_duration"`
	LoadDuration       *int64 `json:"load_duration"`
	PromptEvalCount    int    `json:"prompt_eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"`
	EvalCount          int    `json:"eval_count"`
	EvalDuration       int64  `json:"eval_duration"`
	Response           *string
	Message            *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
}

// TestOllamaNative checks both native Ollama routes, streamed and not: the NDJSON framing, the
// content, and the durations of the final object against the schedule the mock applied (TTFT
// 30 ms, ITL 5 ms, 4 tokens): prompt_eval_duration is at least the TTFT, with eval_duration
// at least the TTFT and the 3 gaps, and total is their sum (no queue, no load).
func TestOllamaNative(t *testing.T) {
	_, url := newTestServer(t, Config{TTFT: 30 * time.Millisecond, ITL: 5 * time.Millisecond, PromptCounter: PromptApprox})
	for _, tt := range []struct {
		name, path, body string
		lines            int
	}{
		{"chat stream", "/api/chat", `{"model":"m","messages":[{"role":"user","content":"hi there"}],"options":{"num_predict":4}}`, 5},
		{"generate stream", "/api/generate", `{"model":"m","prompt":"hi there","options":{"num_predict":4}}`, 5},
		{"chat body", "/api/chat", `{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":4}}`, 1},
		{"generate body", "/api/generate", `{"model":"m","stream":false,"prompt":"hi","options":{"num_predict":4}}`, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, url, tt.path, tt.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
			if len(lines) != tt.lines {
				t.Fatalf("%d lines, want %d:\n%s", len(lines), tt.lines, body)
			}
			if tt.lines > 1 && resp.Header.Get("Content-Type") != "application/x-ndjson" {
				t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
			}
			var words strings.Builder
			for _, l := range lines {
				var f ollamaFinal
				if err := json.Unmarshal([]byte(l), &f); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				if f.Message != nil {
					words.WriteString(f.Message.Content)
				}
				if f.Response != nil {
					words.WriteString(*f.Response)
				}
			}
			if n := len(strings.Fields(words.String())); n != 4 {
				t.Errorf("%d words, want 4: %q", n, words.String())
			}
			var f ollamaFinal
			json.Unmarshal([]byte(lines[len(lines)-1]), &f)
			if !f.Done || f.DoneReason != "length" || f.EvalCount != 4 || f.PromptEvalCount == 0 || f.LoadDuration == nil {
				t.Fatalf("final object %+v", f)
			}
			// The first write may be late and the last on time: only the prefill and the sum are
			// bounds of the schedule.
			if f.PromptEvalDuration < int64(30*time.Millisecond) || f.PromptEvalDuration+f.EvalDuration < int64(45*time.Millisecond) {
				t.Errorf("prompt_eval %v, eval %v: shorter than the TTFT 30 ms, or with eval than its 3 gaps of 5 ms too",
					time.Duration(f.PromptEvalDuration), time.Duration(f.EvalDuration))
			}
			if f.TotalDuration != f.PromptEvalDuration+f.EvalDuration {
				t.Errorf("total %d != prompt_eval %d + eval %d (no queue, no load)", f.TotalDuration, f.PromptEvalDuration, f.EvalDuration)
			}
		})
	}
}

// TestTGINative checks /generate_stream (one event per token, details on the last when asked)
// and /generate's timing headers.
func TestTGINative(t *testing.T) {
	_, url := newTestServer(t, Config{TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond, PromptCounter: PromptApprox})
	resp, body := post(t, url, "/generate_stream", `{"inputs":"hello","parameters":{"max_new_tokens":3,"details":true}}`)
	var ev []string
	for _, e := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		d, ok := strings.CutPrefix(e, "data:")
		if !ok || strings.Contains(d, "\n") {
			t.Fatalf("event %q is not one data: line", e)
		}
		ev = append(ev, d)
	}
	if resp.StatusCode != 200 || len(ev) != 3 {
		t.Fatalf("status %d, %d events:\n%s", resp.StatusCode, len(ev), body)
	}
	var last struct {
		Token         struct{ Text string }
		GeneratedText *string `json:"generated_text"`
		Details       *struct {
			FinishReason    string `json:"finish_reason"`
			GeneratedTokens int    `json:"generated_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(ev[2]), &last); err != nil {
		t.Fatal(err)
	}
	if last.GeneratedText == nil || len(strings.Fields(*last.GeneratedText)) != 3 || last.Details == nil ||
		last.Details.FinishReason != "length" || last.Details.GeneratedTokens != 3 {
		t.Fatalf("last event %s", ev[2])
	}
	resp, body = post(t, url, "/generate", `{"inputs":"hello","parameters":{"max_new_tokens":3}}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `{"generated_text":"`) {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	inf, _ := strconv.Atoi(resp.Header.Get("X-Inference-Time"))
	q, qerr := strconv.Atoi(resp.Header.Get("X-Queue-Time"))
	if inf < 24 || qerr != nil || q != 0 || resp.Header.Get("X-Generated-Tokens") != "3" {
		t.Errorf("timing headers %v: want an inference time of at least 24 ms (20 + 2 gaps of 2) and no queue", resp.Header)
	}
}

// TestLlamaCppTimings checks the "timings" object: on the usage chunk when there is one, else
// on the finish chunk, and on bodies; prompt_ms is at least the TTFT applied, with predicted_ms
// at least the TTFT and the gaps, and TimingsScale scales them.
func TestLlamaCppTimings(t *testing.T) {
	type timings struct {
		PromptN     int     `json:"prompt_n"`
		PromptMs    float64 `json:"prompt_ms"`
		PredictedN  int     `json:"predicted_n"`
		PredictedMs float64 `json:"predicted_ms"`
	}
	find := func(t *testing.T, body []byte, stream bool) timings {
		t.Helper()
		var docs []string
		if stream {
			docs = sseEvents(t, body)
		} else {
			docs = []string{string(body)}
		}
		found := 0
		var tm timings
		for _, d := range docs {
			var c struct{ Timings *timings }
			json.Unmarshal([]byte(d), &c)
			if c.Timings != nil {
				found++
				tm = *c.Timings
			}
		}
		if found != 1 {
			t.Fatalf("%d objects with timings, want 1:\n%s", found, body)
		}
		return tm
	}
	for _, scale := range []float64{1, 4} {
		_, url := newTestServer(t, Config{TTFT: 20 * time.Millisecond, ITL: 4 * time.Millisecond, Timings: true, TimingsScale: scale})
		for _, req := range []string{
			`{"model":"m","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","stream":true,"max_tokens":3,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`,
		} {
			_, body := post(t, url, "/v1/chat/completions", req)
			tm := find(t, body, strings.Contains(req, `"stream":true`))
			if tm.PredictedN != 3 || tm.PromptN == 0 || tm.PromptMs < 20*scale || tm.PromptMs+tm.PredictedMs < 28*scale {
				t.Errorf("scale %v: timings %+v: want prompt_ms >= %v and with predicted_ms >= %v", scale, tm, 20*scale, 28*scale)
			}
		}
	}
	_, url := newTestServer(t, Config{})
	_, body := post(t, url, "/v1/chat/completions", `{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	if bytes.Contains(body, []byte("timings")) {
		t.Errorf("timings without Config.Timings: %s", body)
	}
}

// TestSlotsQueueAndMetrics sends 3 requests to a mock with one slot and a response of at
// least 310 ms (TTFT 300 ms, 3 tokens 5 ms apart), each once the one before holds the slot or
// waits for it, so that queueing follows from causality, not timing: the first reports no
// queue, the other two one, the third at least the whole response of the second; and the
// /metrics page's queue histogram counts what the requests reported (Ollama's total_duration
// - prompt_eval - eval is the queue).
func TestSlotsQueueAndMetrics(t *testing.T) {
	s, url := newTestServer(t, Config{TTFT: 300 * time.Millisecond, ITL: 5 * time.Millisecond, Slots: 1, PromptCounter: PromptApprox})
	var wg sync.WaitGroup
	queues := make([]time.Duration, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/api/chat", "application/json", strings.NewReader(`{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":3}}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var f ollamaFinal
			if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
				t.Error(err)
				return
			}
			queues[i] = time.Duration(f.TotalDuration - f.PromptEvalDuration - f.EvalDuration)
		}()
		// Request i has arrived, the slot is taken (by the first) and every later one waits.
		for deadline := time.Now().Add(10 * time.Second); s.Stats().Requests != int64(i+1) || len(s.slots) != 1 || s.waiting.Load() != int64(i); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("request %d: %d arrived, %d slots taken, %d waiting", i, s.Stats().Requests, len(s.slots), s.waiting.Load())
			}
		}
	}
	wg.Wait()
	var sum time.Duration
	for _, q := range queues {
		sum += q
	}
	// The third waited for the second's whole response, at least 300 + 2*5 ms.
	if queues[0] != 0 || queues[1] <= 0 || queues[2] < 310*time.Millisecond {
		t.Errorf("queues %v: want none, some, and at least a whole response of 310 ms", queues)
	}
	vals, page := metricsPage(t, url)
	lbl := `{model_name="mock-model"}`
	if vals["vllm:request_queue_time_seconds_count"+lbl] != 3 || vals["vllm:request_prefill_time_seconds_count"+lbl] != 3 {
		t.Fatalf("counts on the page:\n%s", page)
	}
	if got := vals["vllm:request_queue_time_seconds_sum"+lbl]; got < sum.Seconds()-1e-9 || got > sum.Seconds()+1e-9 {
		t.Errorf("queue sum %v s, the requests reported %v", got, sum.Seconds())
	}
	if vals[`vllm:request_decode_time_seconds_bucket{le="+Inf",model_name="mock-model"}`] != 3 {
		t.Errorf("+Inf bucket of decode:\n%s", page)
	}
}

// metricsPage reads the mock's /metrics page into a map of series to value, and returns the
// page too.
func metricsPage(t *testing.T, url string) (map[string]float64, []byte) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	vals := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(page))
	for sc.Scan() {
		if l := sc.Text(); !strings.HasPrefix(l, "#") {
			name, v, _ := strings.Cut(l, " ")
			vals[name], _ = strconv.ParseFloat(v, 64)
		}
	}
	return vals, page
}

// TestKVCacheCapacityModel holds one request in its slot (a 2 s TTFT) and queues a second
// behind it, then reads /metrics: one running, one waiting, and the KV cache holding the first
// request's 100 prompt tokens of 1,000 (the queued request holds nothing). Once both have
// ended, nothing is held: prompt and generated tokens were released.
func TestKVCacheCapacityModel(t *testing.T) {
	s, url := newTestServer(t, Config{TTFT: 2 * time.Second, ITL: time.Millisecond, Slots: 1, KVCacheTokens: 1000, PromptCounter: PromptApprox})
	body := `{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}`
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		for deadline := time.Now().Add(10 * time.Second); s.Stats().Requests != int64(i+1) || len(s.slots) != 1 || s.waiting.Load() != int64(i); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("request %d did not arrive and queue", i)
			}
		}
	}
	lbl := `{model_name="mock-model"}`
	vals, _ := metricsPage(t, url)
	if vals["vllm:num_requests_running"+lbl] != 1 || vals["vllm:num_requests_waiting"+lbl] != 1 || vals["vllm:kv_cache_usage_perc"+lbl] != 0.1 {
		t.Errorf("running %v, waiting %v, kv usage %v; want 1, 1, 0.1", vals["vllm:num_requests_running"+lbl], vals["vllm:num_requests_waiting"+lbl], vals["vllm:kv_cache_usage_perc"+lbl])
	}
	wg.Wait()
	vals, _ = metricsPage(t, url)
	if v, ok := vals["vllm:kv_cache_usage_perc"+lbl]; !ok || v != 0 {
		t.Errorf("kv usage %v (on the page: %v) after every request ended, want 0", v, ok)
	}
	_, plain := newTestServer(t, Config{})
	vals, _ = metricsPage(t, plain)
	if _, ok := vals["vllm:kv_cache_usage_perc"+lbl]; ok {
		t.Error("a kv-cache gauge without kv-cache-tokens")
	}
}
