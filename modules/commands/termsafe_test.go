package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/llmtap/llmtap/api/client"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/ui/top"
)

// hostileModel is a model name a client chose (the proxy keeps it when the server answers
// 500): it would set the terminal's title, clear the screen and, through 8-bit CSI, colour it.
const hostileModel = "m\x1b]0;pwned\x07\x1b[2J\u009b31m\x7f\x9b1m\tx\ny"

// controlIn returns the first control a terminal would act on in out (newlines and tabs the
// printer laid out are allowed), or "".
func controlIn(out string) string {
	for i, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r == utf8.RuneError && !strings.HasPrefix(out[i:], "\uFFFD"):
			return "an invalid byte"
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return string(r)
		}
	}
	return ""
}

// TestConsoleEscapesClientText: a client-chosen model name reaches no terminal raw through
// llmtap canary (text and JSON) or llmtap top's table (issue 35: it set the operator's
// terminal title and cleared the screen). Each fails without termsafe.
func TestConsoleEscapesClientText(t *testing.T) {
	t.Parallel()
	doc := client.Mirror{Counters: mirror.Counters{Sampled: 50, Sent: 50, Completed: 50},
		Verdicts: []mirror.ModelVerdict{{Model: hostileModel, Verdict: mirror.Verdict{Outcome: mirror.VerdictSame, Pairs: 50}}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	for _, args := range [][]string{{}, {"--json"}} {
		var out bytes.Buffer
		fs := flag.NewFlagSet("llmtap canary", flag.ContinueOnError)
		code, err := canaryMain(context.Background(), &out, fs, append([]string{"--admin", srv.URL, "--timeout", "10s"}, args...))
		if code != 0 || err != nil || !strings.Contains(out.String(), "pwned") {
			t.Fatalf("canary %v: exit %d, %v, printed %q; want exit 0 and the verdict of the model", args, code, err, out.String())
		}
		if c := controlIn(out.String()); c != "" {
			t.Errorf("canary %v printed the control %q of a client's model name: %q", args, c, out.String())
		}
		if len(args) > 0 { // JSON: the escapes are JSON's own, the name decodes unchanged (but for the invalid byte, U+FFFD in any JSON)
			var vs []mirror.ModelVerdict
			if err := json.Unmarshal(out.Bytes(), &vs); err != nil || len(vs) != 1 || vs[0].Model != strings.ToValidUTF8(hostileModel, "\uFFFD") {
				t.Errorf("canary --json printed %q (%v): want the model name back unchanged", out.String(), err)
			}
		}
	}

	v := top.New(top.Options{Base: "http://127.0.0.1:2019", Keep: 2})
	w := &llmtapv1.TimelineWindow{Seq: 1, Source: "timeline",
		Series: []*llmtapv1.Series{{Model: hostileModel, Class: "live", Requests: 3, RequestRate: 3, Errors: 3,
			ErrorsByClass: map[string]int64{"http_status": 3}}}}
	v.Add(w)
	frame := v.Frame(w, 0)
	if c := controlIn(frame); c != "" || !strings.Contains(frame, "pwned") {
		t.Errorf("top's frame has the control %q of a client's model name (or not the name): %q", c, frame)
	}
	// A tab or newline in the name stays in its cell: the table keeps one line per row.
	if lines := strings.Count(frame, "\n"); strings.Contains(frame, "\ny") || lines > 8 {
		t.Errorf("the model name's newline broke top's table (%d lines):\n%s", lines, frame)
	}
}
