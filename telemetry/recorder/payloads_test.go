package recorder

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmtap/llmtap/format/recfile"
	"github.com/llmtap/llmtap/format/trace"
)

// TestInvalidUTF8PayloadKeepsFileValid writes bodies that are not UTF-8 (with and without
// redaction, one of them pretty-printed) between ordinary ones: every line of the payload
// file must stay valid JSON text, which RFC 8259 requires to be UTF-8 (encoding/json's Valid
// does not check that; Python's json and jq refuse such lines), and format/trace must hand back each body byte for byte
// (redacted bodies as the redactor wrote them).
func TestInvalidUTF8PayloadKeepsFileValid(t *testing.T) {
	bodies := []string{
		`{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"ok"}]}`,
		"{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9 \xff\"}]}",
		"{\n  \"model\": \"m\",\n  \"max_tokens\": 5,\n  \"prompt\": \"\xc3\x28\"\n}",
		`{"model":"m","max_tokens":6,"prompt":"fine"}`,
	}
	for _, redact := range []Redact{{}, {Fields: []string{"user"}}} {
		r, dir := open(t, Options{Payloads: true, Redact: redact})
		t0 := time.Now()
		for i, b := range bodies {
			if !r.Submit(rec(i, t0.Add(time.Duration(i)*time.Millisecond), []byte(b)), nil) {
				t.Fatal("dropped")
			}
		}
		closeRec(t, r)
		files := filesOf(t, dir, recfile.KindPayloads)
		if len(files) != 1 {
			t.Fatalf("%d payload files", len(files))
		}
		raw, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(raw) {
			t.Errorf("redact %+v: the payload file is not UTF-8, so not JSON text", redact)
		}
		for line := range bytes.Lines(raw) {
			if !utf8.Valid(line) || !json.Valid(line) {
				t.Errorf("redact %+v: line is not valid JSON: %q", redact, line)
			}
		}
		got, _ := readAll(t, dir, recfile.KindPayloads, trace.FormatPayloads)
		if len(got) != len(bodies) {
			t.Fatalf("read %d payloads of %d", len(got), len(bodies))
		}
		for i, b := range bodies {
			want := b // without rules, base64 keeps even the line breaks
			if i == 2 && redact.active() {
				want = "{\"model\":\"m\",\"max_tokens\":5,\"prompt\":\"\xc3\x28\"}" // rewritten: one line
			}
			if string(got[i].Payload) != want || got[i].OutputLength != 5+i { // output_tokens of rec
				t.Errorf("redact %+v, body %d: read back %q (output %d), want %q", redact, i, got[i].Payload, got[i].OutputLength, want)
			}
		}
		if n := strings.Count(string(raw), `"payload_b64"`); n != 2 {
			t.Errorf("redact %+v: %d lines in base64, want the 2 bodies that are not UTF-8", redact, n)
		}
	}
}
