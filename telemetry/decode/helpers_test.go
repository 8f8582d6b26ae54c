package decode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sseEvent is one event of a captured stream, split by splitSSE.
type sseEvent struct {
	typ, data string
}

// splitSSE is the trivial splitter the fixture tests use: events end with a blank line, "event:"
// names the type, "data:" lines are joined with "\n". It is deliberately independent of the
// framing package, so a bug there cannot hide one here.
func splitSSE(text string) []sseEvent {
	var evs []sseEvent
	for _, block := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var ev sseEvent
		var data []string
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event:"):
				ev.typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
		ev.data = strings.Join(data, "\n")
		evs = append(evs, ev)
	}
	return evs
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// view is a comparable copy of a Result, so that table rows can state every field they expect
// and a test fails on any field it did not mean to change.
type view struct {
	Model           string
	Usage           Usage
	HasUsage        bool
	FinishReason    string
	Choices         int
	ContentEvents   int
	ReasoningEvents int
	ToolCalls       bool
	Refusal         bool
	Text            string
	TextTruncated   bool
	ReasoningText   string
	ErrorType       string
	ErrorMessage    string
	Malformed       int
}

func viewOf(r *Result) view {
	return view{
		Model: r.Model, Usage: r.Usage, HasUsage: r.HasUsage, FinishReason: r.FinishReason,
		Choices: r.Choices, ContentEvents: r.ContentEvents, ReasoningEvents: r.ReasoningEvents,
		ToolCalls: r.ToolCalls, Refusal: r.Refusal, Text: string(r.Text),
		TextTruncated: r.TextTruncated, ReasoningText: string(r.ReasoningText),
		ErrorType: r.ErrorType, ErrorMessage: r.ErrorMessage, Malformed: r.Malformed,
	}
}

// fresh is the view of a decoder that has seen nothing, the base every row starts from.
func fresh() view { return view{Usage: NoUsage} }
