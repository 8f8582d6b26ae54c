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
	// ErrNotFound marks a request naming something that does not exist (NotFound).
	ErrNotFound = errors.New("not found")
)

// Shadow controls the named shadow loads of the host. An empty name means the only load;
// Start, Stop and SetRate return the load's state after the call.
type Shadow interface {
	Start(ctx context.Context, name string) (*llmtapv1.ShadowLoad, error)
	Stop(ctx context.Context, name string) (*llmtapv1.ShadowLoad, error)
	SetRate(ctx context.Context, name string, rate float64) (*llmtapv1.ShadowLoad, error)
	// Status returns every load and the guard rails.
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
