// Package commands registers llmtap's subcommands of the caddy command line:
//
//   - `llmtap mock`: the mock OpenAI-compatible inference server;
//   - `llmtap demo`: the mock behind Caddy with llmtap under load, on loopback, and its summary;
//   - `llmtap bench`: an AIPerf-compatible load generator and measurement against any server;
//   - `llmtap replay`: a recorded or public trace sent again at its own pace (or faster);
//   - `llmtap report`: an HTML report (and PNG charts) of a run, or of two runs compared;
//   - `llmtap top`: a running llmtap (proxy or bench) live in the terminal, over its Connect API;
//   - `llmtap trace`: trace files' statistics, conversion to Mooncake's format, and merging.
//   - `llmtap canary`: waits for the mirror's canary verdict and exits non-zero when the mirror
//     upstream is worse.
//
// Each command parses its own flags with the standard flag package (see register).
package commands

import (
	"errors"
	"flag"
	"fmt"
	"github.com/llmtap/llmtap/internal/termsafe"
	"os"
	"os/signal"
	"syscall"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
)

func init() {
	register("mock", "[--listen 127.0.0.1:8000] [--ttft 20ms] [--itl 5ms] […]",
		"Runs the mock OpenAI-compatible inference server",
		`Runs llmtap's mock inference server: OpenAI chat and completions, streaming and not, with
a precise token schedule (TTFT, ITL, jitter), output lengths, errors, reasoning tokens and an
optional ground-truth log of when it wrote each event. For demos, benchmarks and accuracy tests.`,
		runMock)
	register("demo", "[--duration 15s] [--rate 20] [--output DIR]",
		"Runs the mock server behind Caddy with llmtap under load and prints the summary",
		`Starts the mock inference server and a Caddy config with llmtap and reverse_proxy on
loopback ports, drives it with open-loop Poisson load for --duration with a live progress
line, then prints the AIPerf-style summary table and writes the summary JSON and CSV and the
per-request records to an output folder.`,
		runDemo)
}

// registered lists the names of the subcommands this package registers, in order.
var registered []string

// register adds a subcommand whose flags are parsed by the standard flag package, so each
// command owns its flag set (and its --help) completely.
func register(name, usage, short, long string, run func(fs *flag.FlagSet, args []string) (int, error)) {
	registered = append(registered, name)
	commands = append(commands, command{name, usage, short, long})
	c := commands[len(commands)-1]
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  name,
		Usage: usage,
		Short: short,
		Long:  long,
		CobraFunc: func(cmd *cobra.Command) {
			cmd.DisableFlagParsing = true
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				fs := flag.NewFlagSet("llmtap "+name, flag.ContinueOnError)
				fs.SetOutput(os.Stderr)
				fs.Usage = usageOf(fs, c)
				sigs := make(chan os.Signal, 2)
				signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
				grace := time.Duration(0)
				if graceful[name] {
					grace = stopGrace
				}
				stop := exitAfterSignal(name, sigs, grace, os.Stderr, os.Exit)
				code, err := run(fs, args)
				stop()
				signal.Stop(sigs)
				if errors.Is(err, flag.ErrHelp) {
					return nil
				}
				if err != nil {
					fmt.Fprintf(termsafe.Writer(os.Stderr), "llmtap %s: %v\n", name, err) // errors may quote a server or a file
				}
				if code != 0 {
					os.Exit(code)
				}
				return nil
			}
		},
	})
}
