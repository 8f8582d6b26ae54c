// Command llmtap is Caddy with its standard modules plus every llmtap module and subcommand:
// run it like caddy (`llmtap run --config Caddyfile`), or use its own subcommands
// (`llmtap demo`, `llmtap mock`).
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/llmtap/llmtap"
	_ "github.com/llmtap/llmtap/modules/commands"
)

func main() {
	caddycmd.Main()
}
