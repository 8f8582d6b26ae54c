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
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/llmtap/llmtap/api"
	llmtapv1 "github.com/llmtap/llmtap/gen/llmtap/v1"
	"github.com/llmtap/llmtap/gen/llmtap/v1/llmtapv1connect"
	"github.com/llmtap/llmtap/internal/termsafe"
	"github.com/llmtap/llmtap/shadow/mirror"
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

// canaryDoc is the part of GET /llmtap/mirror the canary command reads.
type canaryDoc struct {
	Counters mirror.Counters       `json:"counters"`
	Verdicts []mirror.ModelVerdict `json:"verdicts"`
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
	base := *admin
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	base = strings.TrimRight(base, "/")
	fetch := func(ctx context.Context) (canaryDoc, error) {
		return fetchCanary(ctx, &http.Client{Timeout: 30 * time.Second}, base+"/llmtap/mirror")
	}
	if *protocol != "json" {
		client, opts, err := topClient(*protocol)
		if err != nil {
			return 2, fmt.Errorf("--protocol %q: want json, connect, grpc or grpcweb", *protocol)
		}
		client.Timeout = 30 * time.Second
		c := llmtapv1connect.NewTapServiceClient(client, base, opts...)
		fetch = func(ctx context.Context) (canaryDoc, error) { return fetchCanaryConnect(ctx, c) }
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	var doc canaryDoc
	for {
		got, err := fetch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break // --timeout passed during a poll: report the last one's verdicts
			}
			return 2, err
		}
		doc = got
		if decided(doc.Verdicts, *model) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(*interval):
			continue
		}
		break
	}
	vs := doc.Verdicts
	if *model != "" {
		vs = pick(vs, *model)
	}
	if *asJSON {
		if err := json.NewEncoder(stdout).Encode(vs); err != nil {
			return 2, err
		}
	} else {
		printCanary(stdout, vs, doc.Counters)
	}
	switch {
	case len(vs) == 0 || !decided(vs, ""):
		return 3, fmt.Errorf("no verdict within %v", *timeout)
	case anyIs(vs, mirror.VerdictWorse):
		return 1, nil
	case anyIs(vs, mirror.VerdictInconclusive):
		return 3, errors.New("inconclusive: a comparison was still undecided at the last look (more looks, or wider margins, would decide)")
	}
	return 0, nil
}

// fetchCanary reads GET /llmtap/mirror.
func fetchCanary(ctx context.Context, c *http.Client, url string) (canaryDoc, error) {
	var doc canaryDoc
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return doc, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return doc, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return doc, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&doc)
	return doc, err
}

// fetchCanaryConnect reads the Connect API's MirrorStatus.
func fetchCanaryConnect(ctx context.Context, c llmtapv1connect.TapServiceClient) (canaryDoc, error) {
	res, err := c.MirrorStatus(ctx, connect.NewRequest(&llmtapv1.MirrorStatusRequest{}))
	if err != nil {
		return canaryDoc{}, fmt.Errorf("MirrorStatus: %w", err)
	}
	doc := canaryDoc{Counters: api.MirrorCountersFromProto(res.Msg.GetCounters()), Verdicts: []mirror.ModelVerdict{}}
	for _, v := range res.Msg.GetVerdicts() {
		doc.Verdicts = append(doc.Verdicts, api.MirrorVerdictFromProto(v))
	}
	return doc, nil
}

// decided reports whether the model (every model when empty) has a verdict other than "not
// enough pairs yet" (inconclusive is final, so decided); no model at all is not decided.
func decided(vs []mirror.ModelVerdict, model string) bool {
	if model != "" {
		vs = pick(vs, model)
	}
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		if v.Outcome == mirror.VerdictNotEnough {
			return false
		}
	}
	return true
}

func pick(vs []mirror.ModelVerdict, model string) []mirror.ModelVerdict {
	for _, v := range vs {
		if v.Model == model {
			return []mirror.ModelVerdict{v}
		}
	}
	return nil
}

func anyIs(vs []mirror.ModelVerdict, outcome string) bool {
	for _, v := range vs {
		if v.Outcome == outcome {
			return true
		}
	}
	return false
}

// printCanary writes one line per model and the comparisons that decided it.
func printCanary(w io.Writer, vs []mirror.ModelVerdict, c mirror.Counters) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "no pairs yet: is mirroring configured and are live requests coming in?")
	}
	for _, v := range vs {
		fmt.Fprintf(w, "%s: %s\n", v.Model, v.Verdict)
		for _, m := range v.Comparisons {
			if m.Count == 0 {
				continue
			}
			fmt.Fprintf(w, "  %-24s live %10.3f  mirror %10.3f  estimate %7.3f  [%.3f, %.3f]  margin %.3g  %s", m.Name, m.Base, m.Other, m.Estimate, m.Low, m.High, m.Margin, m.Outcome)
			if m.Outcome == mirror.VerdictNotEnough && m.Needed > 0 {
				fmt.Fprintf(w, " (about %d pairs needed)", m.Needed)
			}
			fmt.Fprintln(w)
		}
	}
	if share, ok := api.SkippedShare(c); ok {
		var why []string
		for r, n := range c.Skipped {
			if n > 0 {
				why = append(why, fmt.Sprintf("%s %d", r, n))
			}
		}
		slices.Sort(why)
		fmt.Fprintf(w, "mirrored %d of %d sampled live requests; %.2f%% skipped", c.Sent, c.Sampled, 100*share)
		if len(why) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(why, ", "))
		}
		fmt.Fprintln(w)
	}
}
