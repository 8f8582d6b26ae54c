package commands

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/llmtap/llmtap/mock"
)

// runMock serves the mock inference server until SIGINT or SIGTERM.
func runMock(fs *flag.FlagSet, args []string) (int, error) {
	cfg := mock.RegisterFlags(fs)
	listen := fs.String("listen", "127.0.0.1:8000", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	srv, err := mock.New(*cfg)
	if err != nil {
		return 2, err
	}
	defer srv.Close()
	srv.Warm() // the first requests do not pay for loading the tokenizer
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "llmtap mock: serving OpenAI-compatible API on http://%s (TTFT %v, ITL %v, %d tokens by default)\n",
		*listen, cfg.TTFT, cfg.ITL, cfg.OutputTokens)
	if err := srv.ListenAndServe(ctx, *listen); err != nil {
		return 1, err
	}
	return 0, nil
}
