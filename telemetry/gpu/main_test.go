package gpu

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind, which is
// how "Close joins the sampler goroutine" is checked outside synctest bubbles.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
