package llmtap_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/llmtap/llmtap/internal/testkit"
)

// TestTopLevelLlmtapMeasuresHandleBlocks loads sites whose proxy is inside handle and route
// blocks with llmtap at the top level, as the README's basic config grows: llmtap is ordered
// before them, so every request they answer is measured, exactly once even where a block has
// its own llmtap too.
func TestTopLevelLlmtapMeasuresHandleBlocks(t *testing.T) {
	up := startUpstream(t, streamingMock())
	p, _ := loadProxy(t, "",
		site{body: "\tllmtap\n\thandle /v1/* {\n\t\treverse_proxy " + up.addr + "\n\t}"},
		site{body: "\tllmtap\n\troute {\n\t\tllmtap\n\t\treverse_proxy " + up.addr + "\n\t}"},
	)
	c := newClient(t)
	for i, id := range []string{"in-handle", "nested"} {
		resp, _, err := testkit.PostJSON(t.Context(), c, p.sites[i]+"/v1/chat/completions", id, chatBody("order-model", 4, true, true))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %v", id, resp, err)
		}
	}
	waitIdle(t)
	recs := string(p.adminGet(t, "/llmtap/requests?limit=1000"))
	for _, id := range []string{"in-handle", "nested"} {
		if n := strings.Count(recs, `"request_id":"`+id+`"`); n != 1 {
			t.Errorf("%s: %d records, want 1 (a top-level llmtap measures what its site's blocks answer, once)", id, n)
		}
	}
	if rec := p.records(t)["in-handle"]; rec.Model != "order-model" || rec.OutputTokens != 4 {
		t.Errorf("the request answered in a handle block: model %q, %d output tokens", rec.Model, rec.OutputTokens)
	}
}
