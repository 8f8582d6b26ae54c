package bench

import (
	"path/filepath"
	"testing"

	"github.com/llmtap/llmtap/load/workload"
)

func TestArtifactDir(t *testing.T) {
	t.Parallel()
	want := filepath.Join("artifacts", "Qwen_Qwen3-0.6B-openai-chat-concurrency2")
	if got := ArtifactDir("Qwen/Qwen3-0.6B", workload.EndpointChat, "concurrency2"); got != want {
		t.Errorf("got %q, want AIPerf's %q", got, want)
	}
}
