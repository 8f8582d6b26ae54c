package commands

import (
	"testing"

	"github.com/llmtap/llmtap/shadow/mockllm"
)

func TestZZProf(t *testing.T) {
	_, url := startMock(t, mockllm.Config{PromptCounter: mockllm.PromptApprox})
	code, _, _, _ := runBenchArgs(t, "--url", url, "--model", "m", "--streaming=false", "--request-rate", "4000",
		"--arrival-pattern", "constant", "--benchmark-duration", "4", "--isl", "4", "--osl", "4", "--pacer-spin", "0", "--artifact-dir", t.TempDir())
	if code != 0 {
		t.Fatal(code)
	}
}
