package decode

import "testing"

func TestKindString(t *testing.T) {
	t.Parallel()
	rows := []struct {
		k    Kind
		want string
	}{
		{Other, "other"}, {Content, "content"}, {Reasoning, "reasoning"}, {Done, "done"},
		{Error, "error"}, {Malformed, "malformed"}, {Malformed + 1, "unknown"},
	}
	for _, r := range rows {
		if got := r.k.String(); got != r.want {
			t.Errorf("Kind(%d).String() = %q, want %q (labels and records use these names)", r.k, got, r.want)
		}
	}
}

func TestInternFinish(t *testing.T) {
	t.Parallel()
	// Every reason must come back unchanged, interned or not.
	for _, r := range []string{"stop", "length", "tool_calls", "content_filter", "function_call", "abort", "error", "eos", "é"} {
		if got := internFinish([]byte(r)); got != r {
			t.Errorf("internFinish(%q) = %q", r, got)
		}
	}
}

func TestChoiceSet(t *testing.T) {
	t.Parallel()
	var s choiceSet
	rows := []struct {
		i      int64
		want   int
		reason string
	}{
		{0, 1, "a first index counts"},
		{0, 1, "a repeated index does not"},
		{127, 2, "an index past the first word grows the set"},
		{-1, 2, "a negative index is not counted"},
		{maxChoiceIndex, 2, "an index past the bound is not counted"},
		{maxChoiceIndex - 1, 3, "the last index under the bound counts"},
	}
	for _, r := range rows {
		if got := s.add(r.i); got != r.want {
			t.Errorf("%s: add(%d) = %d, want %d", r.reason, r.i, got, r.want)
		}
	}
	s.reset()
	if got := s.add(127); got != 1 {
		t.Errorf("after reset add(127) = %d, want 1: reset must clear the bits it keeps", got)
	}
}
