package examples

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// grafanaFile is the example dashboard.
const grafanaFile = "grafana-dashboard.json"

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, file string) []map[string]any {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("%s has no YAML document", file)
	}
	return docs
}

// dig follows keys (map keys, or list indexes as ints) through decoded YAML or JSON.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// names returns the string elements of a decoded list.
func names(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// TestOtelCollectorConfig checks that the Collector's metrics pipeline goes from an OTLP
// receiver to a Prometheus exporter and names only components it defines (the Collector
// refuses to start otherwise).
func TestOtelCollectorConfig(t *testing.T) {
	doc := yamlDocs(t, "otel-collector.yaml")[0]
	pipe := dig(doc, "service", "pipelines", "metrics")
	if pipe == nil {
		t.Fatal("no service.pipelines.metrics")
	}
	for _, kind := range []string{"receivers", "processors", "exporters"} {
		for _, name := range names(dig(pipe, kind)) {
			if dig(doc, kind, name) == nil {
				t.Errorf("the metrics pipeline names %s %q, which is not defined", kind, name)
			}
		}
	}
	if !slices.Contains(names(dig(pipe, "receivers")), "otlp") {
		t.Error("the metrics pipeline does not receive OTLP")
	}
	if !slices.Contains(names(dig(pipe, "exporters")), "prometheus") {
		t.Error("the metrics pipeline does not export to Prometheus")
	}
	if dig(doc, "receivers", "otlp", "protocols", "http") == nil {
		t.Error("the OTLP receiver has no HTTP protocol (Caddy's default OTLP protocol is http/protobuf)")
	}
	// The request records (record { otlp_logs }) have a logs pipeline from OTLP to a store.
	logs := dig(doc, "service", "pipelines", "logs")
	if logs == nil || !slices.Contains(names(dig(logs, "receivers")), "otlp") || len(names(dig(logs, "exporters"))) == 0 {
		t.Fatalf("no logs pipeline from the OTLP receiver to an exporter: %v", logs)
	}
	for _, kind := range []string{"receivers", "processors", "exporters"} {
		for _, name := range names(dig(logs, kind)) {
			if dig(doc, kind, name) == nil {
				t.Errorf("the logs pipeline names %s %q, which is not defined", kind, name)
			}
		}
	}
}

// TestPrometheusConfig checks that Prometheus scrapes Caddy's admin /metrics.
func TestPrometheusConfig(t *testing.T) {
	doc := yamlDocs(t, "prometheus.yml")[0]
	jobs, _ := dig(doc, "scrape_configs").([]any)
	found := false
	for _, j := range jobs {
		if dig(j, "metrics_path") == "/metrics" && slices.Contains(names(dig(j, "static_configs", 0, "targets")), "localhost:2019") {
			found = true
		}
	}
	if !found {
		t.Error("no scrape job reads /metrics from Caddy's admin listener localhost:2019")
	}
}

// TestKubernetesSidecar checks the manifest's wiring (the Service reaches the llmtap container,
// which mounts the ConfigMap) and adapts and validates the Caddyfile in the ConfigMap.
func TestKubernetesSidecar(t *testing.T) {
	offlineEnv(t)
	byKind := map[string]map[string]any{}
	for _, d := range yamlDocs(t, "k8s/vllm-sidecar.yaml") {
		kind, _ := d["kind"].(string)
		byKind[kind] = d
	}
	cm, dep, svc := byKind["ConfigMap"], byKind["Deployment"], byKind["Service"]
	if cm == nil || dep == nil || svc == nil {
		t.Fatalf("want a ConfigMap, a Deployment and a Service, got kinds %v", slices.Sorted(maps.Keys(byKind)))
	}

	caddyfile, _ := dig(cm, "data", "Caddyfile").(string)
	if caddyfile == "" {
		t.Fatal("the ConfigMap has no Caddyfile")
	}
	cfg := adapt(t, "k8s/vllm-sidecar.yaml ConfigMap", []byte(caddyfile))
	if !usesHandler(t, cfg) {
		t.Error("the ConfigMap's Caddyfile has no llmtap handler")
	}
	if !bytes.Contains(cfg, []byte(`"otlp":true`)) {
		t.Error("the ConfigMap's Caddyfile does not push metrics over OTLP (metrics { otlp })")
	}
	if !bytes.Contains(cfg, []byte(`"otlp_logs":true`)) {
		t.Error("the ConfigMap's Caddyfile does not send request records as OTLP logs (record { otlp_logs })")
	}
	validate(t, "k8s ConfigMap Caddyfile", cfg)

	containers, _ := dig(dep, "spec", "template", "spec", "containers").([]any)
	var tap any
	var images []string
	for _, c := range containers {
		images = append(images, fmt.Sprint(dig(c, "name")))
		if dig(c, "name") == "llmtap" {
			tap = c
		}
	}
	if tap == nil || !slices.Contains(images, "vllm") {
		t.Fatalf("want containers vllm and llmtap, got %v", images)
	}
	if dig(tap, "ports", 0, "name") != "http" || dig(tap, "ports", 0, "containerPort") != 8080 {
		t.Errorf("the llmtap container should expose port 8080 named http (the Caddyfile's site), got %v", dig(tap, "ports"))
	}
	if !strings.Contains(caddyfile, ":8080 {") {
		t.Error("the ConfigMap's Caddyfile does not serve :8080, the port the Service targets")
	}
	if dig(svc, "spec", "ports", 0, "targetPort") != "http" {
		t.Errorf("the Service should target the llmtap container's http port, got %v", dig(svc, "spec", "ports", 0, "targetPort"))
	}
	if !reflectEqualJSON(dig(svc, "spec", "selector"), dig(dep, "spec", "template", "metadata", "labels")) {
		t.Error("the Service's selector does not match the Deployment's pod labels")
	}
	var vol string
	for _, v := range dig(dep, "spec", "template", "spec", "volumes").([]any) {
		if dig(v, "configMap", "name") == dig(cm, "metadata", "name") {
			vol = fmt.Sprint(dig(v, "name"))
		}
	}
	mounted := false
	for _, m := range dig(tap, "volumeMounts").([]any) {
		if vol != "" && dig(m, "name") == vol && dig(m, "mountPath") == "/etc/llmtap" {
			mounted = true
		}
	}
	if !mounted {
		t.Error("the llmtap container does not mount the ConfigMap at /etc/llmtap, where its command reads the Caddyfile")
	}
}

// reflectEqualJSON compares two decoded values by their JSON encoding.
func reflectEqualJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && a != nil && bytes.Equal(ja, jb)
}

// metricDecl finds the metric names llmtap registers: the Name of each collector's options,
// and the name of each descriptor a custom collector serves (prometheus.NewDesc).
var metricDecl = regexp.MustCompile(`(?s)(Histogram|Counter|Gauge)Opts\{\s*Name:\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"|(NewDesc)\(\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)

// registeredMetrics reads the names llmtap registers from its source (the module and the
// collectors of export/prom), so a renamed metric fails the dashboard check.
// Histograms also answer to their _bucket, _sum and _count series.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var files []string
	for _, dir := range []string{"../modules/llmtap", "../internal/process", "../export/prom"} {
		files = append(files, glob(t, dir+"/*.go")...)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metricDecl.FindAllStringSubmatch(string(src), -1) {
			if m[3] == "NewDesc" {
				out[m[4]] = true
				continue
			}
			out[m[2]] = true
			if m[1] == "Histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					out[m[2]+s] = true
				}
			}
		}
	}
	if !out["llmtap_requests_total"] || !out["gen_ai_server_time_to_first_token_seconds_bucket"] {
		t.Fatalf("found no llmtap metric declarations (the pattern no longer matches modules/llmtap, internal/process and export/prom?): %v", out)
	}
	return out
}

// promqlWords are the PromQL functions, aggregations and keywords the dashboard may use.
var promqlWords = map[string]bool{
	"histogram_quantile": true, "rate": true, "irate": true, "increase": true, "sum": true,
	"avg": true, "min": true, "max": true, "count": true, "topk": true, "clamp_min": true,
	"label_values": true, "and": true, "or": true, "unless": true, "offset": true,
}

// promqlStrip removes what is not a metric or function name: strings, label matchers, range
// selectors, grouping clauses and numbers.
var promqlStrip = []*regexp.Regexp{
	regexp.MustCompile(`"[^"]*"`),
	regexp.MustCompile(`\{[^}]*\}`),
	regexp.MustCompile(`\[[^\]]*\]`),
	regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	regexp.MustCompile(`\b[0-9][0-9.eE+-]*\b`),
}

var promqlIdent = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)

// unknownMetrics returns the names in a PromQL expression that are neither PromQL words nor
// metrics in known. label_values(metric, label) names a label second, which is skipped.
func unknownMetrics(expr string, known map[string]bool) (metrics, unknown []string) {
	s := expr
	for _, re := range promqlStrip {
		s = re.ReplaceAllString(s, " ")
	}
	s = regexp.MustCompile(`,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)`).ReplaceAllString(s, ")")
	for _, w := range promqlIdent.FindAllString(s, -1) {
		switch {
		case promqlWords[w]:
		case known[w]:
			metrics = append(metrics, w)
		default:
			unknown = append(unknown, w)
		}
	}
	return metrics, unknown
}

func TestUnknownMetrics(t *testing.T) {
	known := map[string]bool{"llmtap_requests_total": true, "x_seconds_bucket": true}
	for _, tc := range []struct {
		name, expr string
		unknown    []string
	}{
		{"a known counter in rate and sum by is accepted", `sum by (class) (rate(llmtap_requests_total{model=~"$model"}[$__rate_interval]))`, nil},
		{"a histogram quantile over known buckets is accepted", `histogram_quantile(0.99, sum by (le) (rate(x_seconds_bucket[5m])))`, nil},
		{"a renamed metric is reported", `sum(rate(llmtap_request_total[5m]))`, []string{"llmtap_request_total"}},
		{"a metric of another exporter is reported", `sum(caddy_http_requests_total)`, []string{"caddy_http_requests_total"}},
		{"names inside label matchers and strings are not metrics", `llmtap_requests_total{error="not_a_metric"}`, nil},
		{"label_values names a label second", `label_values(llmtap_requests_total, model)`, nil},
		{"grouping labels are not metrics", `sum without (instance) (llmtap_requests_total)`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := unknownMetrics(tc.expr, known)
			if !slices.Equal(got, tc.unknown) {
				t.Errorf("unknownMetrics(%q) = %v, want %v", tc.expr, got, tc.unknown)
			}
		})
	}
}

// TestGrafanaDashboard checks that every query of the dashboard (panels and variables) names
// only metrics llmtap registers, and that the metrics the dashboard is for are all shown.
func TestGrafanaDashboard(t *testing.T) {
	known := registeredMetrics(t)
	body, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(body, &dash); err != nil {
		t.Fatalf("%s: %v", grafanaFile, err)
	}
	if len(dash.Panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	used := map[string]bool{}
	check := func(where, expr string) {
		metrics, unknown := unknownMetrics(expr, known)
		if len(unknown) > 0 {
			t.Errorf("%s: %q names %v, which llmtap does not register", where, expr, unknown)
		}
		for _, m := range metrics {
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")] = true
		}
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Expr == "" {
				t.Errorf("panel %q has an empty query", p.Title)
			}
			check("panel "+p.Title, q.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) == nil && q.Query != "" {
			check("variable "+v.Name, q.Query)
		}
	}
	for _, m := range []string{
		"gen_ai_server_time_to_first_token_seconds", "gen_ai_server_time_per_output_token_seconds",
		"gen_ai_server_request_duration_seconds", "llmtap_requests_total", "llmtap_request_errors_total",
		"llmtap_streams_in_flight", "llmtap_records_dropped_total",
	} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
