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

	"connectrpc.com/connect"
	"golang.org/x/term"
	"google.golang.org/protobuf/types/known/durationpb"

	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/termsafe"
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

// topConfig is the parsed command line of llmtap top.
type topConfig struct {
	base         string // http://host:port
	once, plain  bool
	class, model string
	protocol     string
	interval     time.Duration
	timeout      time.Duration
	keep         int // windows a series stays listed after its last activity
}

// topMain is llmtap top with its output and terminal-ness as parameters, for tests.
func topMain(ctx context.Context, stdout io.Writer, fs *flag.FlagSet, args []string, terminal bool) (int, error) {
	var c topConfig
	admin := fs.String("admin", "127.0.0.1:2019", "address of the API: Caddy's admin listener, a site with llmtap_api, or llmtap bench --api-listen (host:port or URL)")
	fs.BoolVar(&c.once, "once", false, "print the first frame of a window in which requests completed (or the last before --timeout) and exit")
	fs.BoolVar(&c.plain, "plain", false, "no screen control: print each frame after the previous one")
	fs.StringVar(&c.class, "class", "", "show only this traffic class (live, shadow, mirror, replay, bench)")
	fs.StringVar(&c.model, "model", "", "show only this model")
	fs.StringVar(&c.protocol, "protocol", "connect", "wire protocol: connect (HTTP/1.1), grpc (HTTP/2 cleartext, for a site with llmtap_api) or grpcweb")
	fs.DurationVar(&c.interval, "interval", 0, "refresh interval (default: every window of the server's timeline, 1s)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Second, "with --once: how long to wait for traffic")
	fs.IntVar(&c.keep, "keep", 10, "windows a model/class row stays listed after its last request")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	c.base = strings.TrimRight(*admin, "/")
	if !strings.Contains(c.base, "://") {
		c.base = "http://" + c.base
	}
	if !strings.HasPrefix(c.base, "http://") && !strings.HasPrefix(c.base, "https://") {
		errs = append(errs, fmt.Errorf("--admin %q: want host:port or an http:// or https:// URL", *admin))
	}
	if c.interval < 0 || c.timeout <= 0 || c.keep < 0 {
		errs = append(errs, errors.New("--interval and --keep must not be negative, --timeout must be positive"))
	}
	client, opts, err := topClient(c.protocol)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return 2, errors.Join(errs...)
	}
	api := llmtapv1connect.NewTapServiceClient(client, c.base, opts...)
	v := &topView{cfg: c, rows: map[[2]string]*topRow{}, client: client}
	if c.once {
		return v.once(ctx, api, stdout)
	}
	return v.live(ctx, api, stdout, terminal && !c.plain)
}

// topClient returns the HTTP client and Connect options of a wire protocol.
func topClient(protocol string) (*http.Client, []connect.ClientOption, error) {
	switch protocol {
	case "connect":
		return &http.Client{Transport: &http.Transport{Proxy: nil}}, nil, nil
	case "grpcweb":
		return &http.Client{Transport: &http.Transport{Proxy: nil}}, []connect.ClientOption{connect.WithGRPCWeb()}, nil
	case "grpc":
		tr := &http.Transport{Proxy: nil, Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		tr.Protocols.SetHTTP2(true)
		return &http.Client{Transport: tr}, []connect.ClientOption{connect.WithGRPC()}, nil
	}
	return nil, nil, fmt.Errorf("--protocol %q: want connect, grpc or grpcweb", protocol)
}

// stream opens the timeline stream.
func (v *topView) stream(ctx context.Context, api llmtapv1connect.TapServiceClient) (*connect.ServerStreamForClient[llmtapv1.StreamTimelineResponse], error) {
	req := &llmtapv1.StreamTimelineRequest{Class: v.cfg.class, Model: v.cfg.model}
	if v.cfg.interval > 0 {
		req.Interval = durationpb.New(v.cfg.interval)
	}
	return api.StreamTimeline(ctx, connect.NewRequest(req))
}

// once waits for the first window in which requests completed and prints it; at the timeout
// it prints the last window it got.
func (v *topView) once(ctx context.Context, api llmtapv1connect.TapServiceClient, w io.Writer) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.timeout)
	defer cancel()
	st, err := v.stream(ctx, api)
	if err != nil {
		return 1, fmt.Errorf("connecting to %s: %w", v.cfg.base, err)
	}
	defer st.Close()
	var last *llmtapv1.TimelineWindow
	for st.Receive() {
		w := st.Msg().GetWindow()
		if !v.add(w) {
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
		return 1, fmt.Errorf("no timeline window from %s within %v: %v", v.cfg.base, v.cfg.timeout, err)
	}
	_, err = io.WriteString(w, termsafe.Text(v.frame(last, 0)+v.tenantsPart(ctx))) // top_tenants.go; no control from a request reaches the terminal
	return 0, err
}

// live shows every window until ctx ends, reconnecting when the stream breaks (a Caddy reload
// replaces the admin server and ends its streams).
func (v *topView) live(ctx context.Context, api llmtapv1connect.TapServiceClient, w io.Writer, ansi bool) (int, error) {
	width := 0
	if ansi {
		fmt.Fprint(w, "\x1b[?25l") // hide the cursor
		defer fmt.Fprint(w, "\x1b[?25h\n")
	}
	for ctx.Err() == nil {
		st, err := v.stream(ctx, api)
		if err == nil {
			for st.Receive() {
				win := st.Msg().GetWindow()
				if !v.add(win) {
					continue // an earlier window sent again final: the view shows the newest
				}
				if f, ok := w.(*os.File); ok && ansi {
					if cols, _, err := term.GetSize(int(f.Fd())); err == nil {
						width = cols
					}
				}
				frame := termsafe.Text(v.frame(win, width) + v.tenantsPart(ctx)) // top_tenants.go; escaped before top's own ESC codes are added
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
		msg, wait := fmt.Sprintf("llmtap top: %s: %v; retrying in 1s", v.cfg.base, err), time.Second
		if err == nil {
			msg, wait = fmt.Sprintf("llmtap top: %s ended the stream (a config reload); reconnecting", v.cfg.base), 100*time.Millisecond
			v.client.CloseIdleConnections() // the replaced server closes them
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
