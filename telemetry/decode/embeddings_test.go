package decode

import "testing"

func TestEmbeddingsBody(t *testing.T) {
	t.Parallel()
	in := func(n int64) Usage {
		return Usage{InputTokens: n, OutputTokens: 0, ReasoningTokens: -1, CachedTokens: -1}
	}
	runFormatRows(t, NewEmbeddings, []formatRow{
		{
			name:   "openai",
			reason: "usage.prompt_tokens is the input; nothing is generated, so output is 0 and the kind Other",
			body:   `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			kinds:  []Kind{Other},
			want:   xview{view: view{Model: "text-embedding-3-small", HasUsage: true, Usage: in(8)}},
		},
		{
			name:   "total only",
			reason: "servers that report only total_tokens: for embeddings that is the input",
			body:   `{"data":[],"usage":{"total_tokens":5}}`,
			kinds:  []Kind{Other},
			want:   xview{view: view{HasUsage: true, Usage: in(5)}},
		},
		{
			name:   "ollama embed",
			reason: "Ollama's /api/embed: prompt_eval_count and the server's durations",
			body:   `{"model":"all-minilm","embeddings":[[0.01,-0.02]],"total_duration":14143917,"load_duration":1019500,"prompt_eval_count":8}`,
			kinds:  []Kind{Other},
			want: xview{view: view{Model: "all-minilm", HasUsage: true, Usage: in(8)},
				ServerTimings: ServerTimings{Format: FormatOllama, PromptEvalCount: 8, LoadDuration: 1019500, TotalDuration: 14143917}},
		},
		{
			name:   "ollama embeddings",
			reason: "the older /api/embeddings reports nothing but the vector",
			body:   `{"embedding":[0.5,0.6]}`,
			kinds:  []Kind{Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "tei array",
			reason: "TEI's native /embed returns a bare array: valid, no usage",
			body:   `[[0.1,0.2],[0.3,0.4]]`,
			kinds:  []Kind{Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "error",
			reason: "an error body is an Error",
			body:   `{"object":"error","message":"This model does not support embeddings","type":"BadRequestError","code":400}`,
			kinds:  []Kind{Error},
			want:   xview{view: view{ErrorType: "BadRequestError", ErrorMessage: "This model does not support embeddings"}},
		},
		{
			name:   "malformed",
			reason: "a cut body",
			body:   `{"data":[`,
			kinds:  []Kind{Malformed},
			want:   xview{view: view{Malformed: 1}},
		},
	})
}

func TestRerankBody(t *testing.T) {
	t.Parallel()
	runFormatRows(t, NewRerank, []formatRow{
		{
			name:   "vllm",
			reason: "vLLM and Jina report usage.total_tokens for the query and documents",
			body:   `{"id":"rerank-1","model":"BAAI/bge-reranker-base","usage":{"total_tokens":56},"results":[{"index":1,"document":{"text":"b"},"relevance_score":0.99}]}`,
			kinds:  []Kind{Other},
			want:   xview{view: view{Model: "BAAI/bge-reranker-base", HasUsage: true, Usage: Usage{InputTokens: 56, OutputTokens: 0, ReasoningTokens: -1, CachedTokens: -1}}},
		},
		{
			name:   "tei",
			reason: "TEI's /rerank returns a bare array of scores",
			body:   `[{"index":0,"score":0.9}]`,
			kinds:  []Kind{Other},
			want:   xview{view: fresh()},
		},
		{
			name:   "events",
			reason: "rerank never streams; an event is read like a body",
			events: []ev{d(`{"usage":{"prompt_tokens":3,"total_tokens":3}}`), te("error", `{"error":{"message":"x","type":"y"}}`)},
			kinds:  []Kind{Other, Error},
			want:   xview{view: view{HasUsage: true, Usage: Usage{InputTokens: 3, OutputTokens: 0, ReasoningTokens: -1, CachedTokens: -1}, ErrorType: "y", ErrorMessage: "x"}},
		},
	})
}
