package decode

import (
	"slices"
	"strings"
	"testing"
)

// serverStream is a stream written the way one server writes it, and what decoding it must
// give: the index of the first event that counts for TTFT (the first Content or Reasoning), the
// text and reasoning text, and the usage.
type serverStream struct {
	file, path, reason string
	firstGenerated     int
	text, reasoning    string
	content, thinking  int // events of each kind
	usage              Usage
	errorType          string
}

// serverStreams are written after each server's documented or published shapes:
//
//   - mistral_thinking.txt: a Magistral model on Mistral's chat completions API. Its reasoning
//     arrives in delta.content as a ThinkChunk ({"type":"thinking","thinking":[TextChunk…]},
//     mistralai client-ts docs/models/components/thinkchunk.md), the answer as plain strings,
//     usage in the finish chunk.
//   - openrouter_error.txt: OpenRouter's mid-stream error (its streaming docs, "Handling Errors
//     During Streaming"): a chunk with a top-level error and finish_reason "error", here with
//     the usage OpenRouter adds to a stream's last chunk.
//   - anthropic_compaction.txt: Anthropic's compaction beta (anthropic-sdk-python
//     beta_compaction_block.py, beta_compaction_content_block_delta.py, beta_usage.py): a
//     compaction block streamed by compaction_delta before the answer, and usage.iterations,
//     whose top-level counts leave the compaction pass out.
var serverStreams = []serverStream{
	{
		file: "mistral_thinking.txt", path: "/v1/chat/completions",
		reason:         "thinking parts are reasoning: TTFT is the first of them, not the first answer token",
		firstGenerated: 1, content: 4, thinking: 9,
		text: "2 + 2 = **4**.", reasoning: "Okay, the user asks for 2+2. That is 4.",
		usage: Usage{InputTokens: 14, OutputTokens: 30, ReasoningTokens: -1, CachedTokens: -1},
	},
	{
		file: "openrouter_error.txt", path: "/v1/chat/completions",
		reason:         "the usage beside the error is the server's count of what was generated",
		firstGenerated: 1, content: 3,
		text:      "The capital of",
		usage:     Usage{InputTokens: 12, OutputTokens: 3, ReasoningTokens: -1, CachedTokens: -1},
		errorType: "server_error",
	},
	{
		file: "anthropic_compaction.txt", path: "/v1/messages",
		reason:         "the compaction summary is generated before the answer; usage sums the iterations",
		firstGenerated: 3, content: 2, thinking: 2,
		text:      "Next, add the metrics directive.",
		reasoning: "Summary: the user is migrating a Go service to Caddy v2; the proxy config is done, metrics remain.",
		usage:     Usage{InputTokens: 203000, OutputTokens: 4500, ReasoningTokens: -1, CachedTokens: 0},
	},
}

func TestServerStreams(t *testing.T) {
	t.Parallel()
	for _, s := range serverStreams {
		t.Run(s.file, func(t *testing.T) {
			_, dec := ForPath(s.path, "text/event-stream")
			defer Put(dec)
			var kinds []Kind
			for _, e := range splitSSE(string(readTestdata(t, s.file))) {
				kinds = append(kinds, dec.Event([]byte(e.typ), []byte(e.data)))
			}
			first := slices.IndexFunc(kinds, func(k Kind) bool { return k == Content || k == Reasoning })
			if first != s.firstGenerated {
				t.Errorf("%s: first generated event %d, want %d (kinds %v)", s.reason, first, s.firstGenerated, kinds)
			}
			r := dec.Result()
			if string(r.Text) != s.text || string(r.ReasoningText) != s.reasoning {
				t.Errorf("%s: text %q reasoning %q, want %q %q", s.reason, r.Text, r.ReasoningText, s.text, s.reasoning)
			}
			if r.ContentEvents != s.content || r.ReasoningEvents != s.thinking {
				t.Errorf("%s: %d content and %d reasoning events, want %d and %d", s.reason, r.ContentEvents, r.ReasoningEvents, s.content, s.thinking)
			}
			if !r.HasUsage || r.Usage != s.usage {
				t.Errorf("%s: usage %+v (HasUsage %v), want %+v", s.reason, r.Usage, r.HasUsage, s.usage)
			}
			if r.ErrorType != s.errorType || (s.errorType != "") != slices.Contains(kinds, Error) {
				t.Errorf("%s: error %q, want %q (kinds %v)", s.reason, r.ErrorType, s.errorType, kinds)
			}
			if strings.Contains(s.path, "chat") {
				// The fast path must agree with fold on these shapes too.
				fast, full := newOpenAI(APIOpenAIChat), newOpenAI(APIOpenAIChat)
				full.fullOnly = true
				for _, e := range splitSSE(string(readTestdata(t, s.file))) {
					compareFastFull(t, fast, full, []byte(e.data))
				}
			}
		})
	}
}
