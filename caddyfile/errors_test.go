package caddyfile

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// inDirective puts block (options, one per line, indented two tabs) in a site's llmtap
// directive; its first line is line 3 of the Caddyfile.
func inDirective(block string) string { return ":8080 {\n\tllmtap {\n" + block + "\n\t}\n}\n" }

// inGlobal puts block in the llmtap global option (with a site that uses the handler); its
// first line is line 3 of the Caddyfile.
func inGlobal(block string) string {
	return "{\n\tllmtap {\n" + block + "\n\t}\n}\n:8080 {\n\tllmtap\n}\n"
}

// errorCase is one invalid Caddyfile: the sentence its error must contain (what was expected)
// and the line it must point at.
type errorCase struct {
	input string
	want  string
	line  int
}

// errorCases holds one invalid value (or more) of every option of the llmtap directive, its
// record and mirror blocks, the llmtap global option and its gpu, scrape, timeline, guard and
// shadow blocks (with trace and headroom), and the llmtap_api directive, beside the cases of TestAdaptErrors.
// TestEveryOptionHasAnErrorCase keeps it complete as options are added.
var errorCases = []errorCase{
	// The llmtap directive.
	{inDirective("\t\tapi"), `api needs one of openai.chat, openai.completions,`, 3},
	{inDirective("\t\tapi openai.chat extra"), `api takes one value, got another: "extra"`, 3},
	{inDirective("\t\tmax_request_body -1"), `max_request_body: "-1" is not a size; expected a number of bytes with an optional unit, such as 1MiB or 65536`, 3},
	{inDirective("\t\tmax_response_body 3GiB"), `max_response_body must be between 1 byte and 2GiB, got "3GiB"`, 3},
	{inDirective("\t\tmax_event_size"), `max_event_size needs a size, such as 1MiB or 65536`, 3},
	{inDirective("\t\ttokenizer"), `tokenizer needs the path of a tokenizer.json file`, 3},
	{inDirective("\t\ttokenizer testdata/missing-tokenizer.json"), `tokenizer: "testdata/missing-tokenizer.json" does not load: stat`, 3},
	{inDirective("\t\ttokenizer testdata/wordpiece-tokenizer.json"), `model: model type "WordPiece" is not supported (supported: BPE)`, 3},
	{inDirective("\t\tinject_usage yes"), `inject_usage takes no value, got "yes"`, 3},
	{inDirective("\t\trecord /a /b"), `record takes one argument on its line, got another: "/b"; put options in a block`, 3},
	{inDirective("\t\tmirror http://a:1 http://b:2"), `mirror takes one argument on its line, got another: "http://b:2"; put options in a block`, 3},
	{inGlobal("\t\tgpu {\n\t\t\tprice_per_gpu_hour free\n\t\t}"), `gpu price_per_gpu_hour: "free" is not a non-negative number`, 4},
	{inDirective("\t\tserver_timing on"), `server_timing takes no value, got "on"`, 3},
	{inDirective("\t\ttenant"), `tenant needs one of header, placeholder or api_key`, 3},
	{inDirective("\t\ttenant header"), `tenant header: name the header`, 3},
	{inDirective("\t\ttenant header X-Team extra"), `tenant takes at most 2 values, got another: "extra"`, 3},
	// slo { … }
	{inDirective("\t\tslo a b"), `slo takes one argument on its line, got another: "b"; put options in a block`, 3},
	{inDirective("\t\tslo {\n\t\t\tmodels\n\t\t}"), `slo models needs at least one model name or pattern`, 4},
	{inDirective("\t\tslo {\n\t\t\ttenants [t\n\t\t\tttft 1s\n\t\t}"), `slo "default": tenant selector "[t" is not a name or a valid pattern`, 6},
	{inDirective("\t\tslo {\n\t\t\tttft fast\n\t\t}"), `slo ttft: "fast" is not a positive duration, such as 250ms or 1s`, 4},
	{inDirective("\t\tslo {\n\t\t\titl\n\t\t}"), `slo itl needs a duration, such as 250ms or 1s`, 4},
	{inDirective("\t\tslo {\n\t\t\tlatency 0s\n\t\t}"), `slo latency: "0s" is not a positive duration`, 4},
	{inDirective("\t\tslo {\n\t\t\tttft 1s 2s\n\t\t}"), `slo ttft takes one value, got another: "2s"`, 4},
	{inDirective("\t\tslo {\n\t\t\ttarget 1\n\t\t}"), `slo target: "1" is not a fraction in (0, 1): a target of 100% leaves no error budget`, 4},
	{inDirective("\t\tslo {\n\t\t\ttarget 101%\n\t\t}"), `slo target: "101%" is not a fraction in (0, 1]`, 4},
	{inDirective("\t\tslo {\n\t\t\ttarget 90%\n\t\t}"), `slo "default": sets no threshold; give at least one of ttft, itl or latency`, 5},
	{inDirective("\t\tslo {\n\t\t\tmodels [x\n\t\t\tttft 1s\n\t\t}"), `slo "[x": model selector "[x" is not a name or a valid pattern`, 6},
	{inDirective("\t\tslo {\n\t\t\tttft 1s\n\t\t}\n\t\tslo {\n\t\t\tlatency 1s\n\t\t}"), `slo "default": the name is given twice; give each SLO its own name`, 8},
	// passive_headroom { … }
	{inDirective("\t\tpassive_headroom on"), `passive_headroom takes no arguments on its line (got "on"); put options in a block`, 3},
	{inDirective("\t\tpassive_headroom {\n\t\t\tttft soon\n\t\t}"), `passive_headroom ttft: "soon" is not a positive duration`, 4},
	{inDirective("\t\tpassive_headroom {\n\t\t\twindow 0s\n\t\t\tttft 1s\n\t\t}"), `passive_headroom window: "0s" is not a positive duration`, 4},
	{inDirective("\t\tpassive_headroom {\n\t\t\twindow 2h\n\t\t\tttft 1s\n\t\t}"), `passive_headroom window_seconds 7200: want at most an hour`, 6},
	{inDirective("\t\tpassive_headroom {\n\t\t\twindows 0\n\t\t}"), `passive_headroom windows: "0" is not a number of windows from 1 to 1000`, 4},
	{inDirective("\t\tpassive_headroom {\n\t\t\twindow 5s\n\t\t}"), `passive_headroom ttft_ms 0: want a positive number of milliseconds`, 5},
	// record { … }
	{inDirective("\t\trecord {\n\t\t\tdir\n\t\t}"), `record dir needs a folder`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tfiles\n\t\t}"), `record files needs at least one value`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tfiles logs\n\t\t}"), `record files: "logs" is not one of records, trace or payloads`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tpayloads yes\n\t\t}"), `record payloads takes no value, got "yes"`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tmax_payload huge\n\t\t}"), `record max_payload: "huge" is not a size; expected a number of bytes with an optional unit, such as 1MiB or 65536`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tredact_fields\n\t\t}"), `record redact_fields needs at least one value`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tredact_text all\n\t\t}"), `record redact_text takes no value, got "all"`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\totlp_logs on\n\t\t}"), `record otlp_logs takes no value, got "on"`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tsession_header\n\t\t}"), `record session_header needs a header name`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tsession_header X-Api-Key\n\t\t}"), `record session_header "X-Api-Key" may carry credentials, which are never recorded`, 5},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tsample\n\t\t}"), `record sample needs a fraction in (0, 1] (0.1 or 10%)`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tsample 0\n\t\t}"), `record sample: "0" is not a fraction in (0, 1] (0.1 or 10%)`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tsample 0.5 -1\n\t\t}"), `record sample: "-1" is not a non-negative integer`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\troutes\n\t\t}"), `record routes needs at least one value`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tmodels\n\t\t}"), `record models needs at least one value`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tmodels [\n\t\t}"), `record: model pattern "[" is malformed`, 5},
	{inDirective("\t\trecord /tmp/r {\n\t\t\trotate_size 0\n\t\t}"), `record rotate_size must be between 1 byte and 4EiB, got "0"`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\trotate_age forever\n\t\t}"), `record rotate_age: "forever" is not a positive duration, such as 250ms or 1s`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tflush_interval -1s\n\t\t}"), `record flush_interval: "-1s" is not a positive duration, such as 250ms or 1s`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tqueue 0\n\t\t}"), `record queue: "0" is not a positive number of records`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\tformat csv\n\t\t}"), `record format: "csv" is not one of jsonl or parquet`, 4},
	{inDirective("\t\trecord /tmp/r {\n\t\t\trotate_rows 0\n\t\t}"), `record rotate_rows: "0" is not a positive number of rows`, 4},
	// mirror <upstream> { … }
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tsample 150%\n\t\t}"), `mirror sample: "150%" is not a fraction in (0, 1] (0.1 or 10%)`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tmax_body 0\n\t\t}"), `mirror max_body must be between 1 byte and 2GiB, got "0"`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tmax_in_flight 0\n\t\t}"), `mirror max_in_flight: "0" is not a positive number of requests`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\ttimeout 0s\n\t\t}"), `mirror timeout: "0s" is not a positive duration, such as 250ms or 1s`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\theader_up Transfer-Encoding chunked\n\t\t}"), `mirror header_up: Transfer-Encoding is a hop-by-hop header`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tforward_sensitive\n\t\t}"), `mirror forward_sensitive needs at least one header name, such as Authorization`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tsample_header\n\t\t}"), `mirror sample_header needs a header name`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\ttrust_mirror_of yes\n\t\t}"), `mirror trust_mirror_of`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict strict\n\t\t}"), `verdict takes no arguments on its line`, 4},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\talpha 2\n\t\t\t}\n\t\t}"), `verdict alpha: "2" is not a fraction in (0, 1] (0.1 or 10%)`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tmargin 0\n\t\t\t}\n\t\t}"), `verdict margin: "0" is not a fraction in (0, 1]`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\ttail_margin x\n\t\t\t}\n\t\t}"), `verdict tail_margin: "x" is not a fraction`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\terror_margin -1\n\t\t\t}\n\t\t}"), `verdict error_margin: "-1" is not a fraction`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tmargin_ms -2\n\t\t\t}\n\t\t}"), `verdict margin_ms: "-2" is not a non-negative number`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tdrift 2\n\t\t\t}\n\t\t}"), `verdict drift: "2" is not a fraction`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tdrift_memory 0\n\t\t\t}\n\t\t}"), `verdict drift_memory: "0" is not a number of pairs from 1 to 102400`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tfirst_look 0\n\t\t\t}\n\t\t}"), `verdict first_look: "0" is not a number of pairs from 1 to 1048576`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tlooks 13\n\t\t\t}\n\t\t}"), `verdict looks: "13" is not a number of looks from 1 to 12`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tslo\n\t\t\t}\n\t\t}"), `verdict slo needs at least one metric:value pair, such as time_to_first_token:500`, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tslo time_to_first_token:fast\n\t\t\t}\n\t\t}"), `slo: `, 5},
	{inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tfirst_look 100000\n\t\t\t\tlooks 3\n\t\t\t}\n\t\t}"), `first_look × 2^(looks−1) = 400000 pairs: at most 102400`, 8},
	// The llmtap global option.
	{inGlobal("\t\tgpu {\n\t\t\tinterval\n\t\t}"), `gpu interval needs a duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tgpu {\n\t\t\toff now\n\t\t}"), `gpu off takes no value, got "now"`, 4},
	{inGlobal("\t\tscrape http://a:1/m {\n\t\t\tinterval 0s\n\t\t}"), `scrape interval: "0s" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tscrape http://a:1/m {\n\t\t\tkind\n\t\t}"), `kind`, 4},
	{inGlobal("\t\tlist_price"), `list_price needs a model name or pattern, such as gpt-4o or meta-llama/*`, 3},
	{inGlobal("\t\tlist_price [m {\n\t\t\tinput 1\n\t\t}"), `list_price [m: the pattern is malformed: syntax error in pattern`, 3},
	{inGlobal("\t\tlist_price m {\n\t\t\tinput 1\n\t\t\toutput 2\n\t\t}\n\t\tlist_price m {\n\t\t\tinput 1\n\t\t}"), `list_price m is given twice`, 7},
	{inGlobal("\t\tlist_price m {\n\t\t\tinput 1\n\t\t}"), `list_price m needs both input and output prices per million tokens`, 3},
	{inGlobal("\t\tlist_price m {\n\t\t\tinput free\n\t\t}"), `list_price input: "free" is not a non-negative number`, 4},
	{inGlobal("\t\tlist_price m {\n\t\t\toutput -1\n\t\t}"), `list_price output: "-1" is not a non-negative number`, 4},
	{inGlobal("\t\tlist_price m {\n\t\t\tcached_input NaN\n\t\t}"), `list_price cached_input: "NaN" is not a non-negative number`, 4},
	{inGlobal("\t\tlist_price m {\n\t\t\tcache_write\n\t\t}"), `list_price cache_write needs a non-negative number`, 4},
	{inGlobal("\t\tlist_price m {\n\t\t\tinput 1e308\n\t\t}"), `list_price input: "1e308" is not a price from 0 to 1e+06 (limits.MaxPrice)`, 4},
	{inGlobal("\t\tgpu {\n\t\t\tprice_per_gpu_hour 1e308\n\t\t}"), `gpu price_per_gpu_hour: "1e308" is not a price from 0 to 1e+06 (limits.MaxPrice)`, 4},
	{inGlobal("\t\ttimeline x"), `timeline takes no argument but off, got "x"`, 3},
	{inGlobal("\t\ttimeline {\n\t\t\twindow 0s\n\t\t}"), `timeline window`, 4},
	{inGlobal("\t\ttimeline {\n\t\t\tkeep x\n\t\t}"), `timeline keep: "x" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\ttimeline {\n\t\t\tsettle y\n\t\t}"), `timeline settle: "y" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\ttimeline {\n\t\t\toff 1\n\t\t}"), `timeline off takes no value, got "1"`, 4},
	{inGlobal("\t\tguard {\n\t\t\twindow x\n\t\t}"), `guard window: "x" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tguard {\n\t\t\tttft_p99 x\n\t\t}"), `guard ttft_p99: "x" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tguard {\n\t\t\terror_rate 2\n\t\t}"), `guard error_rate: "2" is not a fraction in [0, 1] (0.1 or 10%)`, 4},
	{inGlobal("\t\tguard {\n\t\t\tmin_requests -3\n\t\t}"), `guard min_requests: "-3" is not a non-negative number of requests`, 4},
	{inGlobal("\t\tguard {\n\t\t\tstatuses abc\n\t\t}"), `statuses: "abc" is not an HTTP status`, 4},
	{inGlobal("\t\tguard {\n\t\t\tcooldown z\n\t\t}"), `guard cooldown: "z" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tbogus 1\n\t\t}"), `unknown shadow option "bogus"`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\turl\n\t\t}"), `shadow url needs a value`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tmodel a b\n\t\t}"), `shadow model takes one value, got another: "b"`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tendpoint_type grpc\n\t\t}"), `shadow endpoint_type: "grpc" is not one of chat, completions, messages or ollama_chat`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\trate -1\n\t\t}"), `shadow rate: "-1" is not a non-negative number`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tarrival\n\t\t}"), `shadow arrival needs one of poisson, gamma or constant`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tsmoothness NaN\n\t\t}"), `shadow smoothness: "NaN" is not a non-negative number`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tisl x\n\t\t}"), `shadow isl: "x" is not a number of tokens from 0 to 2097152 (limits.MaxTokens)`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tisl 1e12\n\t\t}"), `shadow isl: "1e12" is not a number of tokens from 0 to 2097152 (limits.MaxTokens)`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tisl_stddev -2\n\t\t}"), `shadow isl_stddev: "-2" is not a number of tokens from 0 to 2097152 (limits.MaxTokens)`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tosl Inf\n\t\t}"), `shadow osl: "Inf" is not a number of tokens from 0 to 2097152 (limits.MaxTokens)`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tosl_stddev\n\t\t}"), `shadow osl_stddev needs a number of tokens from 0 to 2097152`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\textra\n\t\t}"), `shadow extra needs at least one key:value pair`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tstreaming yes\n\t\t}"), `shadow streaming: "yes" is not on or off`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\theader X-A\n\t\t}"), `shadow header needs a header name and a value`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tseed -1\n\t\t}"), `shadow seed: "-1" is not a non-negative integer`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tentries 1.5\n\t\t}"), `shadow entries: "1.5" is not a number of entries from 0 to 1048576`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tentries 100000000\n\t\t}"), `shadow entries: "100000000" is not a number of entries from 0 to 1048576`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tstart_after 0s\n\t\t}"), `shadow start_after: "0s" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tduration soon\n\t\t}"), `shadow duration: "soon" is not a positive duration, such as 250ms or 1s`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\twindow\n\t\t}"), `shadow window needs a window, such as 22:00-06:00`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tmax_in_flight -1\n\t\t}"), `shadow max_in_flight: "-1" is not a non-negative integer`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tmax_rate x\n\t\t}"), `shadow max_rate: "x" is not a non-negative number`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tshare 0\n\t\t}"), `shadow share: "0" is not a number of instances from 1 to 10000`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\tstopped yes\n\t\t}"), `shadow stopped takes no value, got "yes"`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\ttrace\n\t\t}"), `trace needs a file`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom on\n\t\t}"), `headroom takes no arguments on its line (got "on"); put options in a block`, 4},
	{inGlobal("\t\tshadow s1 {\n\t\t\ttrace /t {\n\t\t\t\tspeedup -1\n\t\t\t}\n\t\t}"), `trace speedup: "-1" is not a non-negative number`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\ttrace /t {\n\t\t\t\tformat\n\t\t\t}\n\t\t}"), `trace format needs a value`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\ttrace /t {\n\t\t\t\tmax_requests -5\n\t\t\t}\n\t\t}"), `trace max_requests: "-5" is not a non-negative number of requests`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\ttrace /t {\n\t\t\t\tzzz\n\t\t\t}\n\t\t}"), `unknown trace option "zzz"`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tstart x\n\t\t\t}\n\t\t}"), `headroom start: "x" is not a non-negative number`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tstep -1\n\t\t\t}\n\t\t}"), `headroom step: "-1" is not a non-negative number`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tmax\n\t\t\t}\n\t\t}"), `headroom max needs a non-negative number`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tstep_duration 0s\n\t\t\t}\n\t\t}"), `headroom step_duration: "0s" is not a positive duration, such as 250ms or 1s`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tslo\n\t\t\t}\n\t\t}"), `headroom slo needs at least one metric:value pair, such as time_to_first_token:500`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tattainment 101%\n\t\t\t}\n\t\t}"), `headroom attainment: "101%" is not a fraction in [0, 1] (0.1 or 10%)`, 5},
	{inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tmin_live -1\n\t\t\t}\n\t\t}"), `headroom min_live: "-1" is not a non-negative integer`, 5},
	// The llmtap_api directive.
	{":8080 {\n\tllmtap_api {\n\t\tcontrol yes\n\t}\n}\n", `control takes no value, got "yes"`, 3},
	{":8080 {\n\tllmtap_api on\n}\n", `llmtap_api takes no arguments on its line (got "on")`, 2},
	{":8080 {\n\tllmtap_api {\n\t\tmax_streams 0\n\t}\n}\n", `max_streams: "0" is not a number of streams from 1 to 10000`, 3},
	{":8080 {\n\tllmtap_api {\n\t\tmax_streams 1e9\n\t}\n}\n", `max_streams: "1e9" is not a number of streams from 1 to 10000`, 3},
}

// TestOptionErrors adapts every case of errorCases: each must fail with its sentence and its
// file:line.
func TestOptionErrors(t *testing.T) {
	t.Parallel()
	for _, c := range errorCases {
		t.Run(strings.ReplaceAll(strings.TrimSpace(c.want), "/", "_"), func(t *testing.T) {
			_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(c.input), map[string]any{"filename": "Caddyfile"})
			if err == nil {
				t.Fatalf("adapting succeeded:\n%s\nwant an error containing %q", c.input, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error\n  %v\nwant it to contain\n  %s", err, c.want)
			}
			if pos := fmt.Sprintf("Caddyfile:%d", c.line); !strings.Contains(err.Error(), pos) {
				t.Fatalf("error\n  %v\ndoes not name the position %s", err, pos)
			}
		})
	}
}

// optionBlocks are the blocks whose unknown-option error lists the valid options, with an input
// that puts an unknown option in each.
var optionBlocks = map[string]string{
	"llmtap directive": inDirective("\t\tzzz"),
	"record":           inDirective("\t\trecord /tmp/r {\n\t\t\tzzz\n\t\t}"),
	"mirror":           inDirective("\t\tmirror http://a:1 {\n\t\t\tzzz\n\t\t}"),
	"slo":              inDirective("\t\tslo {\n\t\t\tzzz\n\t\t}"),
	"passive_headroom": inDirective("\t\tpassive_headroom {\n\t\t\tzzz\n\t\t}"),
	"verdict":          inDirective("\t\tmirror http://a:1 {\n\t\t\tverdict {\n\t\t\t\tzzz\n\t\t\t}\n\t\t}"),
	"llmtap global":    inGlobal("\t\tzzz"),
	"gpu":              inGlobal("\t\tgpu {\n\t\t\tzzz\n\t\t}"),
	"scrape":           inGlobal("\t\tscrape http://a:1/m {\n\t\t\tzzz\n\t\t}"),
	"list_price":       inGlobal("\t\tlist_price m {\n\t\t\tzzz\n\t\t}"),
	"timeline":         inGlobal("\t\ttimeline {\n\t\t\tzzz\n\t\t}"),
	"guard":            inGlobal("\t\tguard {\n\t\t\tzzz\n\t\t}"),
	"shadow":           inGlobal("\t\tshadow s1 {\n\t\t\tzzz\n\t\t}"),
	"trace":            inGlobal("\t\tshadow s1 {\n\t\t\ttrace /t {\n\t\t\t\tzzz\n\t\t\t}\n\t\t}"),
	"headroom":         inGlobal("\t\tshadow s1 {\n\t\t\theadroom {\n\t\t\t\tzzz\n\t\t\t}\n\t\t}"),
	"llmtap_api":       ":8080 {\n\tllmtap_api {\n\t\tzzz\n\t}\n}\n",
}

// TestEveryOptionHasAnErrorCase reads the option names each block's unknown-option error lists
// (so it follows the parsers as options are added) and fails for any option that no case of
// errorCases gives an invalid value. Options that take no value or open a block are covered by
// a case giving them a value or an invalid sub-option.
func TestEveryOptionHasAnErrorCase(t *testing.T) {
	t.Parallel()
	word := regexp.MustCompile(`[a-z][a-z0-9_]*`)
	for block, input := range optionBlocks {
		_, _, err := caddyconfig.GetAdapter("caddyfile").Adapt([]byte(input), map[string]any{"filename": "Caddyfile"})
		if err == nil {
			t.Errorf("%s: an unknown option was accepted", block)
			continue
		}
		_, list, ok := strings.Cut(err.Error(), "expected ")
		if !ok {
			t.Errorf("%s: the unknown-option error does not say what is expected: %v", block, err)
			continue
		}
		list, _, _ = strings.Cut(list, ", at ")
		for _, opt := range word.FindAllString(list, -1) {
			if opt == "or" || opt == "one" || opt == "of" {
				continue
			}
			if !coveredOption(opt) {
				t.Errorf("%s option %q has no invalid case in errorCases", block, opt)
			}
		}
	}
}

// coveredOption reports whether some case's input starts a line with opt.
func coveredOption(opt string) bool {
	re := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(opt) + `(\s|$)`)
	for _, c := range errorCases {
		if re.MatchString(c.input) {
			return true
		}
	}
	return false
}
