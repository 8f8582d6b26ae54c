package llmtap_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/llmtap/llmtap/internal/testkit"
	"github.com/llmtap/llmtap/mock"
	"github.com/llmtap/llmtap/telemetry/record"
)

// TestPlaceholdersAndServerTiming runs Caddy with llmtap (tenant, server_timing), log_append
// of the llmtap placeholders and a JSON access log, and checks: the access log line of each
// request holds the record's TTFT, ITL, token counts and tenant (set before the log is
// written); a token count the tokenizer computes later (no usage in the stream) is empty; a
// client that sent "TE: trailers" gets a Server-Timing trailer with the record's TTFT; a client
// that did not gets no trailer and exactly the bytes the mock wrote. The time split's
// placeholders and trailer metrics hold the record's queue, prefill, decode and network times
// (an Ollama /api/chat request, whose server reports them), empty where the server reported none.
func TestPlaceholdersAndServerTiming(t *testing.T) {
	up := startUpstream(t, mock.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond, OutputTokens: 5, Seed: 11})
	logPath := filepath.Join(t.TempDir(), "access.log")
	model := ownName("ph-")
	body := "\tlog {\n\t\toutput file " + logPath + "\n\t\tformat json\n\t}\n" +
		"\tlog_append ttft_ms {http.vars.llmtap.ttft_ms}\n\tlog_append itl_ms {http.vars.llmtap.itl_ms}\n" +
		"\tlog_append input_tokens {http.vars.llmtap.input_tokens}\n\tlog_append output_tokens {http.vars.llmtap.output_tokens}\n" +
		"\tlog_append tenant {http.vars.llmtap.tenant}\n\tlog_append request_id {http.vars.llmtap.request_id}\n" +
		"\tlog_append queue_ms {http.vars.llmtap.queue_ms}\n\tlog_append prefill_ms {http.vars.llmtap.prefill_ms}\n" +
		"\tlog_append decode_ms {http.vars.llmtap.decode_ms}\n\tlog_append network_ms {http.vars.llmtap.network_ms}\n" +
		"\tllmtap {\n\t\ttenant header X-Tenant\n\t\tserver_timing\n\t}\n\treverse_proxy " + up.addr + " {\n\t\tflush_interval -1\n\t}"
	p, _ := loadProxy(t, "", site{body: body})
	c := newClient(t)
	type sent struct {
		id      string
		usage   bool
		te      bool
		ollama  bool // Ollama's native /api/chat: the server reports its queue, prefill and decode
		trailer string
		body    []byte
	}
	reqs := []*sent{{id: model + "-usage-te", usage: true, te: true}, {id: model + "-usage", usage: true}, {id: model + "-nousage", usage: false, te: true},
		{id: model + "-ollama-te", usage: true, te: true, ollama: true}}
	for _, s := range reqs {
		path, body := "/v1/chat/completions", chatBody(model, 5, true, s.usage)
		if s.ollama {
			path, body = "/api/chat", []byte(ollamaChat(model, 5, true))
		}
		req, err := testkit.NewPost(t.Context(), p.sites[0]+path, s.id, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Tenant", "acme")
		if s.te {
			req.Header.Set("TE", "trailers")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		s.body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", s.id, resp.Status, err)
		}
		s.trailer = resp.Trailer.Get("Server-Timing")
	}
	recs := p.records(t)
	logged := readAccessLog(t, logPath, len(reqs))
	num := func(v any) string { return fmt.Sprint(v) }
	for _, s := range reqs {
		r, line := recs[s.id], logged[s.id]
		if line == nil {
			t.Errorf("%s: no access log line", s.id)
			continue
		}
		if r.TTFTMs == nil || num(line["ttft_ms"]) != strconv.FormatFloat(*r.TTFTMs, 'f', -1, 64) {
			t.Errorf("%s: access log ttft_ms %v, record %v", s.id, line["ttft_ms"], r.TTFTMs)
		}
		// A known figure is a JSON number in the access log, as a number variable is.
		if _, isNum := line["ttft_ms"].(float64); !isNum {
			t.Errorf("%s: access log ttft_ms %#v is not a JSON number", s.id, line["ttft_ms"])
		}
		if _, isNum := line["input_tokens"].(float64); s.usage && !isNum {
			t.Errorf("%s: access log input_tokens %#v is not a JSON number", s.id, line["input_tokens"])
		}
		if line["tenant"] != "acme" {
			t.Errorf("%s: access log tenant %v", s.id, line["tenant"])
		}
		if s.usage {
			if num(line["output_tokens"]) != strconv.FormatInt(r.OutputTokens, 10) || num(line["input_tokens"]) != strconv.FormatInt(r.InputTokens, 10) ||
				r.ITLMs == nil || num(line["itl_ms"]) != strconv.FormatFloat(*r.ITLMs, 'f', -1, 64) {
				t.Errorf("%s: access log tokens %v/%v itl %v; record %d/%d %v", s.id, line["input_tokens"], line["output_tokens"], line["itl_ms"], r.InputTokens, r.OutputTokens, r.ITLMs)
			}
		} else if line["output_tokens"] != "" || line["itl_ms"] != "" || r.OutputTokens != 5 {
			// The tokenizer counts this stream's output after the response: not known yet.
			t.Errorf("%s: access log output_tokens %q itl %q, want empty (record: %d from %s)", s.id, line["output_tokens"], line["itl_ms"], r.OutputTokens, r.OutputTokensSource)
		}
		// The time split: the record's figures, or empty where the server reported none (the
		// OpenAI-style mock reports none; its Ollama API reports all four).
		split := r.Split
		if split == nil {
			split = &record.TimeSplit{}
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"queue", split.QueueMs}, {"prefill", split.PrefillMs}, {"decode", split.DecodeMs}, {"network", split.NetworkMs}} {
			want := ""
			if f.v != nil {
				want = strconv.FormatFloat(*f.v, 'f', -1, 64)
			} else if s.ollama {
				t.Errorf("%s: the record has no %s time: %+v", s.id, f.name, split)
			}
			if got := fmt.Sprint(line[f.name+"_ms"]); got != want {
				t.Errorf("%s: access log %s_ms %q, record %q", s.id, f.name, got, want)
			}
			if s.te && f.v != nil && !regexp.MustCompile(`(^|, )`+f.name+`;dur=`+regexp.QuoteMeta(strconv.FormatFloat(*f.v, 'f', 3, 64))+`(,|$)`).MatchString(s.trailer) {
				t.Errorf("%s: Server-Timing trailer %q, want the record's %s %v", s.id, s.trailer, f.name, *f.v)
			}
		}
		sentBytes, _ := up.sentBody(s.id)
		if s.te {
			if r.TTFTMs == nil || !regexp.MustCompile(`(^|, )ttft;dur=`+regexp.QuoteMeta(strconv.FormatFloat(*r.TTFTMs, 'f', 3, 64))+`(,|$)`).MatchString(s.trailer) {
				t.Errorf("%s: Server-Timing trailer %q, want the record's TTFT %v", s.id, s.trailer, r.TTFTMs)
			}
		} else if s.trailer != "" {
			t.Errorf("%s: a client that did not send TE: trailers got a trailer %q", s.id, s.trailer)
		}
		if !bytes.Equal(s.body, sentBytes) {
			t.Errorf("%s: the client got %d bytes, the mock wrote %d", s.id, len(s.body), len(sentBytes))
		}
	}
}

// readAccessLog reads the JSON access log until it holds want lines with a request_id (Caddy
// writes a request's line after its handler returned, so it may follow the response), at most
// 10 s, and returns them by request id.
func readAccessLog(t *testing.T, path string, want int) map[string]map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		logged := map[string]map[string]any{}
		if b, err := os.ReadFile(path); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				var line map[string]any
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					continue // a line being written
				}
				if id, _ := line["request_id"].(string); id != "" {
					logged[id] = line
				}
			}
		}
		if len(logged) >= want || time.Now().After(deadline) {
			return logged
		}
		time.Sleep(10 * time.Millisecond)
	}
}
