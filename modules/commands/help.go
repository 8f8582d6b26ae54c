package commands

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
)

// command is one of llmtap's subcommands as register was given it, for the help text.
type command struct{ name, usage, short, long string }

// commands lists llmtap's subcommands in the order they registered.
var commands []command

// Docs is where a command's documentation is, named in the help text.
const Docs = "https://github.com/llmtap/llmtap (README.md; docs/ for every directive, route, metric and record field)"

// Help answers what llmtap's command line asks about llmtap itself before Caddy's command
// line sees it: no arguments, help, -h and --help print llmtap's overview (its own commands
// first, then Caddy's); `help <command>` becomes `<command> --help`; version prints llmtap's
// version and the Caddy it embeds. It returns the arguments to hand to Caddy's command line
// and whether it answered already.
func Help(args []string, w io.Writer) ([]string, bool) {
	switch {
	case len(args) == 0 || (len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help")):
		writeOverview(w)
		return nil, true
	case len(args) == 1 && (args[0] == "version" || args[0] == "--version"):
		fmt.Fprintln(w, Version())
		return nil, true
	case len(args) == 2 && args[0] == "help":
		if _, ok := caddycmd.Commands()[args[1]]; ok {
			return []string{args[1], "--help"}, false
		}
	}
	return args, false
}

// writeOverview writes llmtap's help: what it is, its commands, Caddy's, and where the docs
// are.
func writeOverview(w io.Writer) {
	var b strings.Builder
	b.WriteString(`llmtap measures LLM inference traffic from a Caddy reverse proxy: TTFT, inter-token
latency, tokens and throughput of live streams, recording for replay, shadow load, a canary
verdict for a mirror upstream, headroom, and the GPU on one timeline.

Usage: llmtap <command> [flags]

llmtap's commands:
`)
	own := slices.SortedFunc(slices.Values(commands), func(a, b command) int { return strings.Compare(a.name, b.name) })
	width := 0
	for _, c := range own {
		width = max(width, len(c.name))
	}
	for _, c := range own {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, c.name, c.short)
	}
	var caddys []string
	for name := range caddycmd.Commands() {
		if !slices.ContainsFunc(commands, func(c command) bool { return c.name == name }) {
			caddys = append(caddys, name)
		}
	}
	slices.Sort(caddys)
	fmt.Fprintf(&b, `
The proxy is Caddy with the llmtap modules: Caddy's commands run it (llmtap run --config
Caddyfile):
  %s

'llmtap help <command>' (or 'llmtap <command> --help') lists a command's flags;
'llmtap version' prints llmtap's version and the Caddy it embeds.
Docs: %s
`, wrap(strings.Join(caddys, ", "), 90, "  "), Docs)
	io.WriteString(w, b.String())
}

// wrap breaks s at spaces into lines of at most n bytes, every line after the first indented.
func wrap(s string, n int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		if i > 0 && line+1+len(word) > n {
			b.WriteString("\n" + indent)
			line = 0
		} else if i > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += len(word)
	}
	return b.String()
}

// Version is llmtap's version line: the module version (or "(devel)" for a build from a
// source tree), the commit it was built from when Go stamped one, and the Caddy and Go it was
// built with.
func Version() string {
	ver, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			ver = bi.Main.Version
		}
		var commit, at, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = ", modified"
				}
			}
		}
		if commit != "" {
			rev = fmt.Sprintf(" (commit %.12s %s%s)", commit, at, dirty)
		}
	}
	simple, _ := caddy.Version()
	return fmt.Sprintf("llmtap %s%s, Caddy %s, %s %s/%s", ver, rev, simple, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// usageOf is a command's --help: its usage line and description, then its flags as the docs
// write them (--name; a one-letter alias -X), with the defaults a user can type (a negative
// duration that stands for "automatic" is left to the flag's own text).
func usageOf(fs *flag.FlagSet, c command) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: llmtap %s %s\n\n%s\n\nFlags:\n", c.name, c.usage, c.long)
		fs.VisitAll(func(f *flag.Flag) {
			typ, text := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			line := "  " + dash + f.Name
			if typ != "" {
				line += " " + typ
			}
			fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(text, "\n", "\n    \t"))
			if d := f.DefValue; !zeroDefault(d) {
				fmt.Fprintf(w, " (default %s)", d)
			}
			fmt.Fprintln(w)
		})
	}
}

// zeroDefault reports whether a flag's default says nothing worth printing: a zero value, or
// a negative sentinel ("-1ns": the flag's text says what it stands for).
func zeroDefault(d string) bool {
	switch d {
	case "", "0", "0s", "false", "[]", "<nil>":
		return true
	}
	return strings.HasPrefix(d, "-")
}
