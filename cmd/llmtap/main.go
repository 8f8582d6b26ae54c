// Command llmtap is Caddy with its standard modules plus every llmtap module and subcommand:
// run it like caddy (`llmtap run --config Caddyfile`), or use its own subcommands
// (`llmtap demo`, `llmtap mock`).
package main

import (
	"os"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap"
	"github.com/llmtap/llmtap/modules/commands"
)

func main() {
	// llmtap's own help and version first; everything else is Caddy's command line.
	args, done := commands.Help(os.Args[1:], os.Stdout)
	if done {
		return
	}
	os.Args = append(os.Args[:1], args...)
	caddycmd.Main()
}
