package capture

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
)

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestBodyKeepsTheStart: what passes through is the body unchanged; the capture is its first
// max bytes, said to be short when the body was longer or not read to its end.
func TestBodyKeepsTheStart(t *testing.T) {
	for _, c := range []struct {
		name      string
		body      string
		length    int64
		max       int
		readTo    int // bytes the reader takes before Captured; -1: to EOF
		want      string
		truncated bool
	}{
		{"whole, to EOF", "hello world", -1, 64, -1, "hello world", false},
		{"whole by its Content-Length", "hello world", 11, 64, 11, "hello world", false},
		{"longer than the cap", "hello world", -1, 5, -1, "hello", true},
		{"answered before the end", "hello world", 11, 64, 5, "hello", true},
		{"unknown length, not read to EOF", "hello world", -1, 64, 11, "hello world", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := &closeCounter{Reader: strings.NewReader(c.body)}
			b := New(src, c.length, c.max)
			var got []byte
			var err error
			if c.readTo < 0 {
				got, err = io.ReadAll(b)
			} else {
				got = make([]byte, c.readTo)
				_, err = io.ReadFull(b, got)
			}
			if err != nil || !strings.HasPrefix(c.body, string(got)) {
				t.Fatalf("passed through %q (%v), want the body's bytes", got, err)
			}
			kept, short := b.Captured()
			if string(kept) != c.want || short != c.truncated {
				t.Errorf("captured %q (short %v), want %q (short %v)", kept, short, c.want, c.truncated)
			}
			// Reads after Captured pass through and keep nothing more.
			rest, _ := io.ReadAll(b)
			if string(got)+string(rest) != c.body {
				t.Errorf("the reader got %q, want %q", string(got)+string(rest), c.body)
			}
			if again, _ := b.Captured(); !bytes.Equal(again, kept) {
				t.Errorf("the capture changed after it ended: %q, then %q", kept, again)
			}
		})
	}
}

// TestBodyCloseOnlyWhenRead: a transport closes the body of a request it could not send; the
// body stays open for ReadUnsent until something was read from it.
func TestBodyCloseOnlyWhenRead(t *testing.T) {
	src := &closeCounter{Reader: strings.NewReader("abc")}
	b := New(src, 3, 8)
	_ = b.Close()
	if src.closed != 0 {
		t.Fatal("an unread body was closed")
	}
	_, _ = io.ReadAll(b)
	_ = b.Close()
	if src.closed != 1 {
		t.Fatalf("a read body closed %d times, want 1", src.closed)
	}
	w := Whole([]byte(`{"model":"m"}`))
	if kept, short := w.Captured(); string(kept) != `{"model":"m"}` || short {
		t.Errorf("Whole: %q short %v", kept, short)
	}
}

// TestBodyConcurrentReadAndCapture: the transport's goroutine may go on reading while the
// handler takes the capture (an upstream that answered first); under -race this must be clean,
// and the capture is a prefix of the body.
func TestBodyConcurrentReadAndCapture(t *testing.T) {
	body := strings.Repeat("0123456789", 10000)
	pr, pw := io.Pipe()
	b := New(pr, int64(len(body)), 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < len(body); i += 1000 {
			_, _ = io.WriteString(pw, body[i:i+1000])
		}
		_ = pw.Close()
	})
	read := make(chan []byte)
	go func() {
		got, _ := io.ReadAll(b)
		read <- got
	}()
	var kept []byte
	for range 50 {
		kept, _ = b.Peek()
		if len(kept) > 0 {
			break
		}
	}
	kept, _ = b.Captured()
	got := <-read
	wg.Wait()
	if string(got) != body || !strings.HasPrefix(body, string(kept)) {
		t.Errorf("passed through %d bytes (want %d), captured %d bytes not a prefix", len(got), len(body), len(kept))
	}
}
