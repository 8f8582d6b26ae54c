package decode

import (
	"strings"
	"testing"
)

// The shapes the compatibility corpus (telemetry/meter/testdata/corpus, docs/compatibility.md)
// found decoded wrong, each on a stream captured by another project (the corpus_*.txt files
// are copies of corpus streams; the corpus manifest names their sources). The expected values
// are read from the streams.

// corpusChatSeeds are the chat streams of the corpus the fuzz targets start from.
var corpusChatSeeds = []string{"corpus_groq_x_groq.txt", "corpus_snowflake_reasoning_details.txt", "corpus_tgi_chat.txt", "corpus_writer_n2.txt"}

// decodeAll feeds a capture's SSE events to dec and returns the kind of each.
func decodeAll(t *testing.T, dec ResponseDecoder, file string) []Kind {
	t.Helper()
	var kinds []Kind
	for _, e := range splitSSE(string(readTestdata(t, file))) {
		kinds = append(kinds, dec.Event([]byte(e.typ), []byte(e.data)))
	}
	return kinds
}

// TestCorpusGroqUsage: Groq's older streams put the usage only in x_groq.usage on the last chunk
// ("prompt_tokens":18, "completion_tokens":73).
func TestCorpusGroqUsage(t *testing.T) {
	t.Parallel()
	dec := NewOpenAIChat()
	decodeAll(t, dec, "corpus_groq_x_groq.txt")
	r := dec.Result()
	if !r.HasUsage || r.Usage.InputTokens != 18 || r.Usage.OutputTokens != 73 {
		t.Fatalf("usage %+v (has %v), want 18 in, 73 out from x_groq.usage", r.Usage, r.HasUsage)
	}
}

// TestCorpusReasoningDetails: Snowflake Cortex (like OpenRouter) streams Claude's thinking only
// as delta.reasoning_details: the two chunks carrying "15" and " * 27 = 405" are reasoning, and
// the first of them, the stream's first event, is the first token.
func TestCorpusReasoningDetails(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		dec := newOpenAI(APIOpenAIChat)
		dec.fullOnly = full
		kinds := decodeAll(t, dec, "corpus_snowflake_reasoning_details.txt")
		r := dec.Result()
		if kinds[0] != Reasoning || r.ReasoningEvents != 2 || string(r.ReasoningText) != "15 * 27 = 405" {
			t.Errorf("full path %v: first event %v, %d reasoning events %q; want reasoning, 2, %q",
				full, kinds[0], r.ReasoningEvents, r.ReasoningText, "15 * 27 = 405")
		}
	}
}

// TestCorpusEndWithoutDone: streams that end without "[DONE]" once every choice has its
// finish_reason: TGI 2.0.1's chat stream (finish_reason "eos_token"), and Writer's two-choice
// stream, which is not over when only choice 0 has finished.
func TestCorpusEndWithoutDone(t *testing.T) {
	t.Parallel()
	dec := NewOpenAIChat()
	kinds := decodeAll(t, dec, "corpus_tgi_chat.txt")
	if r := dec.Result(); !r.Ended || r.FinishReason != "eos_token" || r.Finished != 1 || kinds[len(kinds)-1] == Done {
		t.Errorf("TGI: ended %v, finish %q, finished %d; want ended on eos_token, with no Done event", r.Ended, r.FinishReason, r.Finished)
	}

	dec = NewOpenAIChat()
	var endedAt []int // the events after which Ended held
	for i, e := range splitSSE(string(readTestdata(t, "corpus_writer_n2.txt"))) {
		dec.Event([]byte(e.typ), []byte(e.data))
		r := dec.Result()
		if r.Ended {
			endedAt = append(endedAt, i)
		}
		if r.Finished == 1 && r.Ended {
			t.Fatalf("event %d: ended with one of %d choices finished", i, r.Choices)
		}
		if strings.Contains(e.data, `"index":1,"finish_reason":"stop"`) && !r.Ended {
			t.Fatalf("event %d: choice 1 finished after choice 0, yet not ended", i)
		}
	}
	if r := dec.Result(); r.Choices != 2 || r.Finished != 2 || len(endedAt) == 0 {
		t.Errorf("Writer n=2: %d choices, %d finished, ended after events %v", r.Choices, r.Finished, endedAt)
	}
}

// TestCorpusAnthropicShapes: an mcp_tool_use block's start (the call's name, "ask_question") is
// output like a tool_use block's; usage.output_tokens_details.thinking_tokens (47 in the
// advisor stream) is the reasoning count.
func TestCorpusAnthropicShapes(t *testing.T) {
	t.Parallel()
	dec := NewAnthropic()
	found := false
	for _, e := range splitSSE(string(readTestdata(t, "corpus_anthropic_mcp.txt"))) {
		k := dec.Event([]byte(e.typ), []byte(e.data))
		if strings.Contains(e.data, `"type":"mcp_tool_use"`) && strings.Contains(e.data, "content_block_start") {
			found = true
			if k != Content {
				t.Errorf("mcp_tool_use block start is %v, want content", k)
			}
		}
	}
	if !found || !dec.Result().ToolCalls {
		t.Errorf("mcp_tool_use seen %v, tool calls %v", found, dec.Result().ToolCalls)
	}

	dec = NewAnthropic()
	decodeAll(t, dec, "corpus_anthropic_thinking_tokens.txt")
	if r := dec.Result(); r.Usage.ReasoningTokens != 47 {
		t.Errorf("reasoning tokens %d, want 47 (output_tokens_details.thinking_tokens)", r.Usage.ReasoningTokens)
	}
}
