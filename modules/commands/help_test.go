package commands

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var updateHelp = flag.Bool("update-help", false, "rewrite testdata/help.golden from the current help text")

// TestHelp: `llmtap`, `llmtap help` and `llmtap --help` print llmtap's overview (golden:
// its own commands first with where the docs are, then Caddy's), `help <command>` becomes that
// command's --help, `version` names llmtap's version and the Caddy it embeds, and anything
// else passes to Caddy's command line unchanged (issue 34: these printed Caddy's help and
// version only).
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{nil, {"help"}, {"--help"}, {"-h"}} {
		out.Reset()
		if rest, done := Help(args, &out); !done || rest != nil {
			t.Fatalf("Help(%q) = %q, %v: want it answered", args, rest, done)
		}
		golden := filepath.Join("testdata", "help.golden")
		if *updateHelp {
			if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != string(want) {
			t.Errorf("Help(%q) printed\n%s\nwant (testdata/help.golden; -update-help rewrites it)\n%s", args, out.String(), want)
		}
	}
	text := out.String()
	first := strings.Index(text, "llmtap's commands:")
	for _, c := range registered {
		if i := strings.Index(text, "\n  "+c+" "); i < first || first < 0 {
			t.Errorf("command %s is not listed under llmtap's commands", c)
		}
	}
	if caddy := strings.Index(text, "Caddy's commands run it"); caddy < first || !strings.Contains(text[caddy:], "reverse-proxy") || !strings.Contains(text, Docs) {
		t.Errorf("Caddy's commands do not follow llmtap's, or the docs are not named:\n%s", text)
	}

	if rest, done := Help([]string{"help", "bench"}, &out); done || !slices.Equal(rest, []string{"bench", "--help"}) {
		t.Errorf("help bench = %q, %v; want bench --help", rest, done)
	}
	for _, args := range [][]string{{"run", "--config", "Caddyfile"}, {"help", "no-such-command"}, {"bench", "--model", "m"}} {
		if rest, done := Help(args, &out); done || !slices.Equal(rest, args) {
			t.Errorf("Help(%q) = %q, %v; want it passed on unchanged", args, rest, done)
		}
	}
	out.Reset()
	if _, done := Help([]string{"version"}, &out); !done || !strings.HasPrefix(out.String(), "llmtap ") || !strings.Contains(out.String(), ", Caddy ") {
		t.Errorf("version printed %q, want llmtap's version and the Caddy it embeds", out.String())
	}
}

// TestCommandUsage: a command's --help lists its flags as the docs write them (--name), with
// its description, and no sentinel default ("-pacer-spin … (default -1ns)" before).
func TestCommandUsage(t *testing.T) {
	var c command
	for _, x := range commands {
		if x.name == "bench" {
			c = x
		}
	}
	fs := flag.NewFlagSet("llmtap bench", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.Usage = usageOf(fs, c)
	if _, err := runLoad(benchMain)(fs, []string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("bench --help: %v", err)
	}
	text := out.String()
	for _, want := range []string{"Usage: llmtap bench --model M", "\n  --pacer-spin duration\n", "\n  --request-rate ", "\n  -H value\n", "(default 0.95)"} {
		if !strings.Contains(text, want) {
			t.Errorf("bench --help lacks %q", want)
		}
	}
	for _, bad := range []string{"\n  -pacer-spin", "(default -1ns)", "\n  -request-rate"} {
		if strings.Contains(text, bad) {
			t.Errorf("bench --help holds %q", bad)
		}
	}
}
