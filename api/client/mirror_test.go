package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmtap/llmtap/mirror"
)

func verdicts(outcomes ...string) Mirror {
	var m Mirror
	for i, o := range outcomes {
		m.Verdicts = append(m.Verdicts, mirror.ModelVerdict{Model: string(rune('a' + i)), Verdict: mirror.Verdict{Outcome: o}})
	}
	return m
}

// TestWaitVerdicts: the poll stops at the first status in which the model asked for (every
// model when none) is decided, returns a read error at once, and at the end of ctx returns the
// last status read with no error, for the caller to judge.
func TestWaitVerdicts(t *testing.T) {
	t.Parallel()
	seq := func(ms ...Mirror) (func(context.Context) (Mirror, error), *int) {
		n := 0
		return func(context.Context) (Mirror, error) {
			m := ms[min(n, len(ms)-1)]
			n++
			return m, nil
		}, &n
	}
	fetch, n := seq(verdicts(mirror.VerdictNotEnough, mirror.VerdictSame), verdicts(mirror.VerdictWorse, mirror.VerdictSame))
	got, err := WaitVerdicts(t.Context(), fetch, "", time.Millisecond)
	if err != nil || *n != 2 || !Decided(got.Verdicts, "") || got.Verdicts[0].Outcome != mirror.VerdictWorse {
		t.Errorf("every model: %d reads, %+v, %v; want 2 reads ending at the decided status", *n, got, err)
	}
	fetch, n = seq(verdicts(mirror.VerdictNotEnough, mirror.VerdictSame))
	if got, err := WaitVerdicts(t.Context(), fetch, "b", time.Hour); err != nil || *n != 1 || len(Pick(got.Verdicts, "b")) != 1 {
		t.Errorf("model b: %d reads, %v; want one read (b is decided at once)", *n, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	fetch, _ = seq(verdicts(mirror.VerdictNotEnough))
	if got, err := WaitVerdicts(ctx, fetch, "", time.Millisecond); err != nil || len(got.Verdicts) != 1 || Decided(got.Verdicts, "") {
		t.Errorf("at the end of ctx: %+v, %v; want the undecided status and no error", got, err)
	}
	boom := errors.New("boom")
	if _, err := WaitVerdicts(t.Context(), func(context.Context) (Mirror, error) { return Mirror{}, boom }, "", time.Millisecond); !errors.Is(err, boom) {
		t.Errorf("a read error: %v, want it returned", err)
	}
	if Decided(nil, "") || Decided(verdicts(mirror.VerdictSame).Verdicts, "zz") {
		t.Error("no verdict, or no verdict of the model asked for, counts as decided")
	}
}
