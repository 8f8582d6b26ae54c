package commands

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/llmtap/llmtap/api/client"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/ui/top"
)

func init() {
	register("top", "[--admin 127.0.0.1:2019] [--once] [--plain] [--class C] [--model M] [--protocol connect|grpc|grpcweb]",
		"Shows a running llmtap (proxy or bench) live in the terminal",
		`Connects to the Connect API of a running llmtap — Caddy's admin listener, a site with the
llmtap_api handler, or llmtap bench --api-listen — and shows its timeline as it streams:
per model and traffic class the request rate, TTFT and ITL p50/p99, output tokens per second,
errors and requests in flight, then the GPUs (utilization, power, memory, temperature), the
inference server's own figures and the shadow loads, when the server has them; on Caddy's admin
listener also the busiest tenants (the handler's tenant option) since the server started. The view
refreshes in place on a terminal; --plain prints one frame per window instead, and --once
prints the first frame that has traffic (or the last one before --timeout) and exits, for
scripts and tests.`,
		runTop)
}

func runTop(fs *flag.FlagSet, args []string) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return topMain(ctx, os.Stdout, fs, args, term.IsTerminal(int(os.Stdout.Fd())))
}

// topMain is llmtap top with its output and terminal-ness as parameters, for tests.
func topMain(ctx context.Context, stdout io.Writer, fs *flag.FlagSet, args []string, terminal bool) (int, error) {
	var o top.Options
	var once, plain bool
	var protocol string
	var timeout time.Duration
	admin := fs.String("admin", "127.0.0.1:2019", "address of the API: Caddy's admin listener, a site with llmtap_api, or llmtap bench --api-listen (host:port or URL)")
	fs.BoolVar(&once, "once", false, "print the first frame of a window in which requests completed (or the last before --timeout) and exit")
	fs.BoolVar(&plain, "plain", false, "no screen control: print each frame after the previous one")
	fs.StringVar(&o.Class, "class", "", "show only this traffic class (live, shadow, mirror, replay, bench)")
	fs.StringVar(&o.Model, "model", "", "show only this model")
	fs.StringVar(&protocol, "protocol", "connect", "wire protocol: connect (HTTP/1.1), grpc (HTTP/2 cleartext, for a site with llmtap_api) or grpcweb")
	fs.DurationVar(&o.Interval, "interval", 0, "refresh interval (default: every window of the server's timeline, 1s)")
	fs.DurationVar(&timeout, "timeout", 15*time.Second, "with --once: how long to wait for traffic")
	fs.IntVar(&o.Keep, "keep", 10, "windows a model/class row stays listed after its last request")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	o.Base = client.Base(*admin)
	if !strings.HasPrefix(o.Base, "http://") && !strings.HasPrefix(o.Base, "https://") {
		errs = append(errs, fmt.Errorf("--admin %q: want host:port or an http:// or https:// URL", *admin))
	}
	if o.Interval < 0 || timeout <= 0 || o.Keep < 0 {
		errs = append(errs, errors.New("--interval and --keep must not be negative, --timeout must be positive"))
	}
	hc, opts, err := client.New(protocol)
	if err != nil {
		errs = append(errs, fmt.Errorf("--%w", err)) // "--protocol …"
	}
	if len(errs) > 0 {
		return 2, errors.Join(errs...)
	}
	api := llmtapv1connect.NewTapServiceClient(hc, o.Base, opts...)
	v := top.New(o)
	if once {
		return topOnce(ctx, v, api, stdout, o.Base, timeout)
	}
	return topLive(ctx, v, api, hc, stdout, o.Base, terminal && !plain)
}

// topOnce waits for the first window in which requests completed and prints it; at the timeout
// it prints the last window it got.
func topOnce(ctx context.Context, v *top.View, api llmtapv1connect.TapServiceClient, w io.Writer, base string, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := v.Stream(ctx, api)
	if err != nil {
		return 1, fmt.Errorf("connecting to %s: %w", base, err)
	}
	defer st.Close()
	var last *llmtapv1.TimelineWindow
	for st.Receive() {
		w := st.Msg().GetWindow()
		if !v.Add(w) {
			continue // an earlier window sent again final: its counts are taken, the view shows the newest
		}
		last = w
		if slices.ContainsFunc(last.GetSeries(), func(s *llmtapv1.Series) bool { return s.GetRequests() > 0 }) {
			break // a window in which requests completed
		}
	}
	if last == nil {
		err := st.Err()
		if err == nil {
			err = ctx.Err()
		}
		return 1, fmt.Errorf("no timeline window from %s within %v: %v", base, timeout, err)
	}
	_, err = io.WriteString(w, termsafe.Text(v.Frame(last, 0)+v.Tenants(ctx))) // no control from a request reaches the terminal
	return 0, err
}

// topLive shows every window until ctx ends, reconnecting when the stream breaks (a Caddy reload
// replaces the admin server and ends its streams).
func topLive(ctx context.Context, v *top.View, api llmtapv1connect.TapServiceClient, hc *http.Client, w io.Writer, base string, ansi bool) (int, error) {
	width := 0
	if ansi {
		fmt.Fprint(w, "\x1b[?25l") // hide the cursor
		defer fmt.Fprint(w, "\x1b[?25h\n")
	}
	for ctx.Err() == nil {
		st, err := v.Stream(ctx, api)
		if err == nil {
			for st.Receive() {
				win := st.Msg().GetWindow()
				if !v.Add(win) {
					continue // an earlier window sent again final: the view shows the newest
				}
				if f, ok := w.(*os.File); ok && ansi {
					if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
						width = cols
					}
				}
				frame := termsafe.Text(v.Frame(win, width) + v.Tenants(ctx)) // escaped before top's own ESC codes are added
				if ansi {
					// Home, each line cleared to its end, then the rest of the screen: no flicker.
					fmt.Fprint(w, "\x1b[H", strings.ReplaceAll(frame, "\n", "\x1b[K\n"), "\x1b[J")
				} else {
					fmt.Fprintln(w, frame)
				}
			}
			err = st.Err()
			st.Close()
		}
		if ctx.Err() != nil {
			break
		}
		// A stream the server ended cleanly belongs to a config that was replaced (a reload):
		// the new one answers at once. An error waits a second before the next try.
		msg, wait := fmt.Sprintf("llmtap top: %s: %v; retrying in 1s", base, err), time.Second
		if err == nil {
			msg, wait = fmt.Sprintf("llmtap top: %s ended the stream (a config reload); reconnecting", base), 100*time.Millisecond
			hc.CloseIdleConnections() // the replaced server closes them
		}
		msg = termsafe.Text(msg) // the error may quote the server
		if ansi {
			fmt.Fprint(w, "\x1b[H\x1b[2J", msg)
		} else {
			fmt.Fprintln(w, msg)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return 0, nil
}
