package commands

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/llmtap/llmtap/api/client"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/mirror"
	"github.com/llmtap/llmtap/report"
)

func init() {
	register("canary", "[--admin 127.0.0.1:2019] [--model M] [--timeout 30m] [--interval 5s] [--json] [--protocol json|connect|grpc|grpcweb]",
		"Waits for the mirror's canary verdict and exits non-zero when the mirror upstream is worse",
		`Polls GET /llmtap/mirror on a running llmtap's admin listener until every model (or the
one --model names) has a canary verdict, prints it, and exits: 0 when the mirror upstream
is not worse than live by more than the margins for every model (the verdict not worse,
same or better), 1 when it is worse for any model, 3 when --timeout passed first
(not enough pairs yet) or a verdict is inconclusive (undecided at the last look, which is
final), 2 on a usage or connection error. A verdict is taken only at looks
(when a model's pairs reach 200, 400, 800 … by default) and spends a share of the false-alarm
budget at each, so polling as often as you like raises neither the chance of a false worse
nor that of a false not worse above the configured alpha (5 % by default). Beside each verdict it prints the share of live
requests the mirror skipped (sampling aside), since a verdict only speaks for the requests
that were copied. --protocol connect (or grpc, grpcweb: the wire protocols of llmtap top) reads
the Connect API's MirrorStatus instead of the JSON route, on the admin listener or a site with
llmtap_api (grpc needs the site's HTTP/2); the verdicts are the same.`,
		runCanary)
}

func runCanary(fs *flag.FlagSet, args []string) (int, error) {
	return canaryMain(context.Background(), os.Stdout, fs, args)
}

// canaryMain is runCanary with its output and context as parameters, for in-process tests.
func canaryMain(ctx context.Context, stdout io.Writer, fs *flag.FlagSet, args []string) (int, error) {
	stdout = termsafe.Writer(stdout) // model names are the clients' (JSON keeps its meaning)
	admin := fs.String("admin", "127.0.0.1:2019", "Caddy's admin listener (host:port or URL)")
	model := fs.String("model", "", "judge only this model (default: every model with pairs)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up (exit 3) when no verdict came within this time")
	interval := fs.Duration("interval", 5*time.Second, "time between polls")
	asJSON := fs.Bool("json", false, "print the verdicts as JSON instead of text")
	protocol := fs.String("protocol", "json", "what to read: json (GET /llmtap/mirror), or the Connect API's MirrorStatus over connect, grpc or grpcweb")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *interval <= 0 || *timeout <= 0 {
		return 2, errors.New("--interval and --timeout must be positive")
	}
	base := client.Base(*admin)
	fetch := func(ctx context.Context) (client.Mirror, error) {
		return client.MirrorJSON(ctx, &http.Client{Timeout: 30 * time.Second}, base+"/llmtap/mirror")
	}
	if *protocol != "json" {
		hc, opts, err := client.New(*protocol)
		if err != nil {
			return 2, fmt.Errorf("--protocol %q: want json, connect, grpc or grpcweb", *protocol)
		}
		hc.Timeout = 30 * time.Second
		c := llmtapv1connect.NewTapServiceClient(hc, base, opts...)
		fetch = func(ctx context.Context) (client.Mirror, error) { return client.MirrorStatus(ctx, c) }
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	doc, err := client.WaitVerdicts(ctx, fetch, *model, *interval)
	if err != nil {
		return 2, err
	}
	vs := doc.Verdicts
	if *model != "" {
		vs = client.Pick(vs, *model)
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(vs); err != nil {
			return 2, err
		}
	} else {
		report.WriteVerdicts(stdout, vs, doc.Counters)
	}
	is := func(outcome string) bool {
		return slices.ContainsFunc(vs, func(v mirror.ModelVerdict) bool { return v.Outcome == outcome })
	}
	switch {
	case len(vs) == 0 || !client.Decided(vs, ""):
		return 3, fmt.Errorf("no verdict within %v", *timeout)
	case is(mirror.VerdictWorse):
		return 1, nil
	case is(mirror.VerdictInconclusive):
		return 3, errors.New("inconclusive: a comparison was still undecided at the last look (more looks, or wider margins, would decide)")
	}
	return 0, nil
}
