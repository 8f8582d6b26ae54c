package api

import (
	"context"
	"errors"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
)

// Errors a Shadow or Recording implementation wraps (fmt.Errorf("%w: …", ErrInvalid)) so the
// service answers with the right code; any other error is an internal error.
var (
	// ErrInvalid marks a request that cannot be carried out as given (InvalidArgument).
	ErrInvalid = errors.New("invalid request")
	// ErrState marks a request that conflicts with the current state, such as stopping what
	// is not running (FailedPrecondition).
	ErrState = errors.New("not possible in the current state")
)

// Shadow controls the shadow load of the host. Every method returns the state after the call.
type Shadow interface {
	Start(ctx context.Context, req *llmtapv1.ShadowStartRequest) (*llmtapv1.ShadowState, error)
	Stop(ctx context.Context) (*llmtapv1.ShadowState, error)
	SetRate(ctx context.Context, rate float64) (*llmtapv1.ShadowState, error)
	Status(ctx context.Context) (*llmtapv1.ShadowState, error)
}

// Recording controls the runtime recording of the host and lists every recording.
type Recording interface {
	// Start starts the runtime recording and returns it.
	Start(ctx context.Context, req *llmtapv1.RecordingStartRequest) (*llmtapv1.Recording, error)
	// Stop stops the runtime recording and returns its final counts.
	Stop(ctx context.Context) (*llmtapv1.Recording, error)
	// Status lists the recordings running now, the runtime one first.
	Status(ctx context.Context) ([]*llmtapv1.Recording, error)
}
