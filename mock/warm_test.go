package mock

import (
	"os"
	"os/exec"
	"testing"
)

// TestWarm checks that Warm loads the vocabulary the first requests would otherwise load while
// being answered. The vocabulary is loaded once per process, so the check runs in a fresh one
// (this test binary, running only warmHelper).
func TestWarm(t *testing.T) {
	if os.Getenv("MOCKLLM_WARM_HELPER") == "1" {
		warmHelper(t)
		return
	}
	for _, counter := range []PromptCounter{PromptO200k, PromptApprox} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWarm$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MOCKLLM_WARM_HELPER=1", "MOCKLLM_WARM_COUNTER="+string(counter))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("prompt counter %s: %v\n%s", counter, err, out)
		}
	}
}

// warmHelper runs in the fresh process: nothing is loaded before Warm, and after it the
// vocabulary is loaded exactly when prompts are counted with it.
func warmHelper(t *testing.T) {
	counter := PromptCounter(os.Getenv("MOCKLLM_WARM_COUNTER"))
	cfg := DefaultConfig()
	cfg.PromptCounter = counter
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o200kLoaded.Load() {
		t.Fatal("the vocabulary was loaded before Warm: the check shows nothing")
	}
	s.Warm()
	if want := counter == PromptO200k; o200kLoaded.Load() != want {
		t.Fatalf("after Warm with prompt counter %s: vocabulary loaded %v, want %v", counter, o200kLoaded.Load(), want)
	}
}
