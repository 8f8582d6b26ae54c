package trace

import (
	"encoding/base64"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

type want struct {
	ts      []time.Duration
	in, out []int
}

func ms(v ...float64) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x * float64(time.Millisecond))
	}
	return d
}

func readAll(t *testing.T, input string, opt Options) ([]Request, Info, error) {
	t.Helper()
	if opt.Name == "" {
		opt.Name = "traces/x"
	}
	rd, err := NewReader(strings.NewReader(input), opt)
	if err != nil {
		return nil, Info{}, err
	}
	var reqs []Request
	for r, err := range rd.All() {
		if err != nil {
			return reqs, rd.Info(), err
		}
		reqs = append(reqs, r)
	}
	return reqs, rd.Info(), nil
}

// TestReaderRules is the rule book of the readers: each row is one rule and why it holds.
func TestReaderRules(t *testing.T) {
	const azHdr = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
	const bgHdr = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
	cases := []struct {
		name   string
		why    string
		opt    Options
		input  string
		want   want
		format Format
		err    string // substring of the error; empty = no error
		torn   int
	}{
		{name: "azure 2023", why: "seven fractional digits, no zone; times are relative to the first row",
			input: azHdr + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n",
			want:  want{ts: ms(0, 52), in: []int{4808, 3180}, out: []int{10, 8}}, format: FormatAzure},
		{name: "azure 2024", why: "the 2024 release adds +00:00 and omits the fraction on whole seconds",
			input: azHdr + "2024-05-12 00:00:00+00:00,1,2\n2024-05-12 00:00:00.001163+00:00,3,4\n",
			want:  want{ts: []time.Duration{0, 1163 * time.Microsecond}, in: []int{1, 3}, out: []int{2, 4}}, format: FormatAzure},
		{name: "azure ISO T and Z", why: "RFC 3339 spellings of the same instant are read too",
			input: azHdr + "2024-05-12T00:00:00Z,1,2\n2024-05-12T02:00:01.5+02:00,3,4\n",
			want:  want{ts: ms(0, 1500), in: []int{1, 3}, out: []int{2, 4}}, format: FormatAzure},
		{name: "azure columns reordered", why: "columns are found by name, case-insensitively",
			input: "generatedtokens,TIMESTAMP,ContextTokens\n7,2023-11-16 18:17:03.0000000,9\n",
			want:  want{ts: ms(0), in: []int{9}, out: []int{7}}, format: FormatAzure},
		{name: "azure bad number", why: "a bad count names file, line and column",
			input: azHdr + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,abc,8\n",
			err:   `traces/x:3: ContextTokens: "abc" is not an integer`},
		{name: "azure negative count", why: "token counts cannot be negative",
			input: azHdr + "2023-11-16 18:17:03.9799600,-5,10\n", err: `traces/x:2: ContextTokens: "-5" is negative`},
		{name: "azure bad time", why: "an unreadable timestamp shows the expected spellings",
			input: azHdr + "16/11/2023 18:17,1,2\n", err: `traces/x:2: TIMESTAMP: "16/11/2023 18:17" is not a time like`},
		{name: "azure short row", why: "a row narrower than the header is an error, not a zero",
			input: azHdr + "2023-11-16 18:17:03.9799600,4808\n", err: "traces/x:2: row has 2 fields, header has 3"},
		{name: "azure missing column", why: "a header without a needed column fails before any row",
			opt: Options{Format: FormatAzure}, input: "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9799600,4808\n",
			err: `traces/x:1: header lacks column "GeneratedTokens"`},
		{name: "azure torn csv", why: "only JSONL forgives a torn last line: a short CSV row could be a wrong number",
			input: azHdr + "2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.03", err: "traces/x:3: row has 1 fields"},
		{name: "azure no final newline", why: "a complete last line without a newline is data",
			input: azHdr + "2023-11-16 18:17:03.9799600,4808,10",
			want:  want{ts: ms(0), in: []int{4808}, out: []int{10}}, format: FormatAzure},
		{name: "BOM and CRLF", why: "files saved by Excel start with a BOM and end lines with CRLF",
			input: "\ufeff" + strings.ReplaceAll(azHdr+"2023-11-16 18:17:03.9799600,4808,10\n", "\n", "\r\n"),
			want:  want{ts: ms(0), in: []int{4808}, out: []int{10}}, format: FormatAzure},
		{name: "blank lines", why: "blank lines (trailing ones especially) are not requests",
			input: "\n" + azHdr + "\n2023-11-16 18:17:03.9799600,4808,10\n\n  \n",
			want:  want{ts: ms(0), in: []int{4808}, out: []int{10}}, format: FormatAzure},
		{name: "empty file", why: "a recorder that just started leaves an empty file: zero requests, no error",
			input: "", want: want{}, format: FormatAuto},
		{name: "only blank lines", why: "whitespace is as empty as nothing",
			input: "\n\r\n", want: want{}, format: FormatAuto},
		{name: "burstgpt v1", why: "seconds as written; zero response tokens is a failure",
			input: bgHdr + "5,ChatGPT,472,18,490,Conversation log\n45,GPT-4,1087,0,1087,API log\n",
			want:  want{ts: ms(5000, 45000), in: []int{472, 1087}, out: []int{18, 0}}, format: FormatBurstGPT},
		{name: "burstgpt v3", why: "the session release has float timestamps and the session columns",
			input: "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n19440110.0,abc,43,GPT-4,906,446,1352,Conversation log\n",
			want:  want{ts: []time.Duration{19440110 * time.Second}, in: []int{906}, out: []int{446}}, format: FormatBurstGPT},
		{name: "burstgpt quoted", why: "quoted fields with commas and escaped quotes are CSV",
			input: bgHdr + `5,"Chat""GPT, v2",472,18,490,"Conversation log"` + "\n",
			want:  want{ts: ms(5000), in: []int{472}, out: []int{18}}, format: FormatBurstGPT},
		{name: "burstgpt bad timestamp", why: "the column is named as the header spells it",
			input: bgHdr + "soon,ChatGPT,472,18,490,Conversation log\n", err: `traces/x:2: Timestamp: "soon" is not a number`},
		{name: "burstgpt unterminated quote", why: "a broken quote is a line error",
			input: bgHdr + `5,"ChatGPT,472,18,490,x` + "\n", err: "traces/x:2: unterminated quoted field"},
		{name: "mooncake", why: "milliseconds as written, integral floats accepted, session and delay kept",
			input: `{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1]}` + "\n" +
				`{"timestamp": 3052.5, "input_length": 7322.0, "output_length": 490, "hash_ids": [0, 14], "session_id": "s1", "delay": 20}` + "\n",
			want: want{ts: ms(0, 3052.5), in: []int{6758, 7322}, out: []int{500, 490}}, format: FormatMooncake},
		{name: "mooncake torn", why: "a crash tears the last JSONL line: stop there and report it, no error",
			input: `{"timestamp": 0, "input_length": 1, "output_length": 2}` + "\n" + `{"timestamp": 5, "input_le`,
			want:  want{ts: ms(0), in: []int{1}, out: []int{2}}, format: FormatMooncake, torn: 2},
		{name: "mooncake only torn line", why: "a file holding one torn line is an empty trace",
			input: `{"timestamp": 5, "input_le`, want: want{}, format: FormatAuto, torn: 1},
		{name: "mooncake bad middle line", why: "a bad line with a newline is corruption, not a crash",
			input: `{"timestamp": 0, "input_length": 1}` + "\n" + `{"timestamp": 5, "input_le` + "\n" + `{"timestamp": 6, "input_length": 1}` + "\n",
			err:   "traces/x:2: not valid JSON"},
		{name: "mooncake bad hash id", why: "the failing element is named with its index",
			input: `{"timestamp": 0, "input_length": 1, "hash_ids": [1, "x"]}` + "\n", err: "traces/x:1: hash_ids[1]: want a number, got string"},
		{name: "mooncake fractional length", why: "a token count must be an integer",
			input: `{"timestamp": 0, "input_length": 1.5}` + "\n", err: `traces/x:1: input_length: "1.5" is not an integer`},
		{name: "mooncake negative timestamp", why: "replayers schedule from zero",
			input: `{"timestamp": -1, "input_length": 1}` + "\n", err: `traces/x:1: timestamp: "-1" is negative`},
		{name: "mooncake text_input", why: "rows without input_length are named as unsupported, not misread as empty",
			opt: Options{Format: FormatMooncake}, input: `{"timestamp": 0, "text_input": "hi"}` + "\n", err: "input_length: missing (text_input"},
		{name: "records", why: "start becomes the offset from the first record, which may be negative (completion order)",
			input: `{"request_id":"a","start":"2025-01-01T00:00:01Z","input_tokens":10,"output_tokens":5,"model":"m","error":"","request_latency_ms":12.5}` + "\n" +
				`{"request_id":"b","start":"2025-01-01T00:00:00.5Z","input_tokens":7,"output_tokens":0,"model":"m","error":"http_status","request_latency_ms":null}` + "\n",
			want: want{ts: ms(0, -500), in: []int{10, 7}, out: []int{5, 0}}, format: FormatRecords},
		{name: "records bad start", why: "start must be RFC 3339",
			input: `{"request_id":"a","start":"yesterday","input_tokens":1}` + "\n", err: `traces/x:1: start: "yesterday" is not an RFC 3339 time`},
		{name: "payloads", why: "timestamp_ms as written; output falls back to max_tokens",
			input: `{"timestamp_ms": 1.5, "payload": {"model": "m", "max_tokens": 64, "messages": []}}` + "\n",
			want:  want{ts: ms(1.5), in: []int{0}, out: []int{64}}, format: FormatPayloads},
		{name: "payloads base64", why: "a body that is not UTF-8 comes as payload_b64 and is read the same way",
			input: `{"timestamp_ms": 2, "payload_b64": "eyJtb2RlbCI6Im0iLCJtYXhfdG9rZW5zIjo2NCwicCI6Iv8ifQ=="}` + "\n",
			want:  want{ts: ms(2), in: []int{0}, out: []int{64}}, format: FormatPayloads},
		{name: "payloads both", why: "a line with payload and payload_b64 is ambiguous",
			input: `{"timestamp_ms": 1, "payload": {}, "payload_b64": "e30="}` + "\n", err: "traces/x:1: payload_b64: the line has payload too"},
		{name: "payloads base64 not object", why: "the decoded bytes are a request body, so an object",
			input: `{"timestamp_ms": 1, "payload_b64": "aGk="}` + "\n", err: "traces/x:1: payload_b64: want a JSON object"},
		{name: "payloads not object", why: "the payload is a request body, so an object",
			input: `{"timestamp_ms": 1, "payload": "hi"}` + "\n", err: "traces/x:1: payload: want a JSON object"},
		{name: "payloads bad delay", why: "a think time is a non-negative number of milliseconds",
			input: `{"timestamp_ms": 1, "session_id": "s", "delay_ms": -3, "payload": {}}` + "\n", err: "traces/x:1: delay_ms:"},
		{name: "payloads missing timestamp", why: "an explicit format still checks required keys",
			opt: Options{Format: FormatPayloads}, input: `{"payload": {}}` + "\n", err: "traces/x:1: timestamp_ms: missing"},
		{name: "explicit format mismatch", why: "a JSONL format given a CSV file fails on line 1",
			opt: Options{Format: FormatMooncake}, input: azHdr, err: "traces/x:1: not valid JSON"},
		{name: "unknown JSON", why: "detection lists the keys it saw and what it wanted",
			input: `{"foo": 1}` + "\n", err: "traces/x:1: unrecognized JSON trace (keys foo)"},
		{name: "unknown CSV", why: "detection shows the header it did not recognize",
			input: "a,b,c\n1,2,3\n", err: `traces/x:1: unrecognized trace header "a,b,c"`},
		{name: "JSON array", why: "a JSON array file is a common mistake worth naming",
			input: "[{\"timestamp\": 0}]\n", err: "traces/x:1: a JSON array is not a trace"},
		{name: "skip bad", why: "with SkipBad a bad row is counted and the rest is read",
			opt:   Options{SkipBad: true},
			input: azHdr + "2023-11-16 18:17:03.0000000,1,2\n2023-11-16 18:17:04.0000000,x,2\n2023-11-16 18:17:05.0000000,3,4\n",
			want:  want{ts: ms(0, 2000), in: []int{1, 3}, out: []int{2, 4}}, format: FormatAzure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reqs, info, err := readAll(t, tc.input, tc.opt)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%s: error %v, want one containing %q", tc.why, err, tc.err)
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line == 0 {
					t.Errorf("%s: error %T does not carry a position", tc.why, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.why, err)
			}
			if info.Format != tc.format || info.Torn != tc.torn {
				t.Errorf("%s: format %q torn %d, want %q torn %d", tc.why, info.Format, info.Torn, tc.format, tc.torn)
			}
			var got want
			for _, r := range reqs {
				got.ts = append(got.ts, r.Timestamp)
				got.in = append(got.in, r.InputLength)
				got.out = append(got.out, r.OutputLength)
			}
			if !slices.Equal(got.ts, tc.want.ts) || !slices.Equal(got.in, tc.want.in) || !slices.Equal(got.out, tc.want.out) {
				t.Errorf("%s:\n got %+v\nwant %+v", tc.why, got, tc.want)
			}
		})
	}
}

// TestReaderDetails checks the fields the rule table does not compare.
func TestReaderDetails(t *testing.T) {
	t.Parallel()
	t.Run("mooncake session", func(t *testing.T) {
		reqs, _, err := readAll(t, `{"timestamp": 1, "input_length": 600, "hash_ids": [3, 4], "session_id": "s1", "delay": 20.25}`+"\n", Options{})
		if err != nil || len(reqs) != 1 {
			t.Fatal(err, reqs)
		}
		r := reqs[0]
		if r.SessionID != "s1" || r.Delay != 20250*time.Microsecond || !slices.Equal(r.HashIDs, []int64{3, 4}) {
			t.Errorf("session, delay or hash ids lost: %+v", r)
		}
	})
	t.Run("payloads session", func(t *testing.T) {
		reqs, _, err := readAll(t, `{"timestamp_ms": 9, "session_id": "s2", "delay_ms": 300.5, "payload": {"model": "m"}}`+"\n", Options{})
		if err != nil || len(reqs) != 1 {
			t.Fatal(err, reqs)
		}
		if r := reqs[0]; r.SessionID != "s2" || r.Delay != 300500*time.Microsecond {
			t.Errorf("session or delay lost: %+v", r)
		}
	})
	t.Run("records sessions", func(t *testing.T) {
		// Completion order: a's first turn (0–100 ms), b's only turn, a's second turn 300 ms
		// after the first ended, a third sent before the second ended, a request without one.
		reqs, _, err := readAll(t, `{"request_id":"r","start":"2025-01-01T00:00:00Z","session_id":"a","duration_ms":100}
{"request_id":"r","start":"2025-01-01T00:00:00.05Z","session_id":"b","duration_ms":10}
{"request_id":"r","start":"2025-01-01T00:00:00.4Z","session_id":"a","duration_ms":50.5}
{"request_id":"r","start":"2025-01-01T00:00:00.45Z","session_id":"a","duration_ms":1}
{"request_id":"r","start":"2025-01-01T00:00:01Z","duration_ms":1}
`, Options{})
		if err != nil || len(reqs) != 5 {
			t.Fatal(err, reqs)
		}
		want := []struct {
			sid   string
			delay time.Duration
		}{{"a", 0}, {"b", 0}, {"a", 300 * time.Millisecond}, {"a", 0}, {"", 0}}
		for i, w := range want {
			if reqs[i].SessionID != w.sid || reqs[i].Delay != w.delay {
				t.Errorf("record %d: session %q delay %v, want %q %v", i, reqs[i].SessionID, reqs[i].Delay, w.sid, w.delay)
			}
		}
	})
	t.Run("records failure and latency", func(t *testing.T) {
		reqs, _, err := readAll(t, `{"request_id":"a","class":"live","path":"/v1/chat/completions","start":"2025-01-01T00:00:00Z","model":"m","error":"stream_error","request_latency_ms":12.5}`+"\n", Options{})
		if err != nil || len(reqs) != 1 {
			t.Fatal(err, reqs)
		}
		r := reqs[0]
		if !r.Failed || r.Latency != 12500*time.Microsecond || r.Model != "m" || r.Class != "live" || r.Path != "/v1/chat/completions" {
			t.Errorf("record fields lost: %+v", r)
		}
	})
	t.Run("payload verbatim", func(t *testing.T) {
		body := `{"model":"m",  "messages":[{"role":"user","content":"a\u00e9"}],"max_completion_tokens":9,"max_tokens":3}`
		reqs, _, err := readAll(t, `{"timestamp_ms": 0, "path": "/v1/chat/completions", "output_tokens": 7, "payload": `+body+`}`+"\n", Options{})
		if err != nil || len(reqs) != 1 {
			t.Fatal(err, reqs)
		}
		r := reqs[0]
		if string(r.Payload) != body || r.Model != "m" || r.OutputLength != 7 || r.Path != "/v1/chat/completions" {
			t.Errorf("payload not verbatim or fields lost: %+v (%s)", r, r.Payload)
		}
	})
	t.Run("payload base64 verbatim", func(t *testing.T) {
		body := "{\"model\":\"m\",\n \"p\":\"\xff\xfe\"}" // not UTF-8, and spread over two lines
		line := `{"timestamp_ms": 0, "path": "/v1/completions", "payload_b64": "` + base64.StdEncoding.EncodeToString([]byte(body)) + `"}`
		reqs, _, err := readAll(t, line+"\n", Options{})
		if err != nil || len(reqs) != 1 {
			t.Fatal(err, reqs)
		}
		if r := reqs[0]; string(r.Payload) != body || r.Model != "m" || r.Path != "/v1/completions" {
			t.Errorf("payload_b64 not handed over byte for byte: %+v (%q)", r, r.Payload)
		}
	})
	t.Run("skip bad info", func(t *testing.T) {
		_, info, err := readAll(t, "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.0000000,x,2\n2023-11-16 18:17:03.0000000,y,2\n", Options{SkipBad: true})
		if err != nil || info.Skipped != 2 || info.FirstSkipped == nil || !strings.Contains(info.FirstSkipped.Error(), "traces/x:2:") {
			t.Errorf("err %v, info %+v: want 2 skipped, the first at line 2", err, info)
		}
	})
	t.Run("next after error", func(t *testing.T) {
		rd, err := NewReader(strings.NewReader("{\"input_length\": 1}\n{bad\n{\"input_length\": 2}\n"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		rd.Next()
		if _, err := rd.Next(); err == nil {
			t.Fatal("line 2 should fail")
		}
		if _, err := rd.Next(); !errors.Is(err, io.EOF) {
			t.Errorf("after an error Next returned %v, want io.EOF", err)
		}
	})
	t.Run("long line", func(t *testing.T) {
		_, _, err := readAll(t, `{"input_length": 1, "pad": "`+strings.Repeat("x", 200)+`"}`+"\n", Options{MaxLineBytes: 100})
		if err == nil || !strings.Contains(err.Error(), "longer than 100 bytes") {
			t.Errorf("a line over MaxLineBytes gave %v", err)
		}
	})
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"": FormatAuto, "auto": FormatAuto, "Azure": FormatAzure, " mooncake ": FormatMooncake} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("parquet"); err == nil {
		t.Error("an unknown format was accepted")
	}
}
