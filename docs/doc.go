// Package docs holds the reference pages of llmtap's Caddy modules (one Markdown page per
// module ID) and the test that keeps them true: the JSON field reference of each page is
// generated from the config structs' doc comments (go test ./docs -update rewrites it), every
// Caddyfile example adapts to the JSON shown beside it, and every module, admin route, metric
// and record field is documented.
package docs
