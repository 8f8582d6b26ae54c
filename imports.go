// Package llmtap is the root of the llmtap Caddy plugin: importing it (as xcaddy does with
// `--with github.com/llmtap/llmtap`) registers every llmtap module and Caddyfile directive.
package llmtap

import (
	_ "github.com/llmtap/llmtap/caddyfile"
	_ "github.com/llmtap/llmtap/modules/llmtap"
)
