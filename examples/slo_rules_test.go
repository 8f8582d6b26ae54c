package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sloRules is the example rule file of the SLO attainment (docs/slo.md); sloRulesTest its
// promtool unit tests.
const (
	sloRules     = "slo-rules.yml"
	sloRulesTest = "slo-rules.test.yml"
)

// promtool finds Debian's promtool (package prometheus, which `make tools` installs); the rule
// checks need it, so its absence fails them.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found (%v): run `make tools`, which installs Debian's prometheus package", err)
	}
	return p
}

// TestSLORules checks the example SLO rules with promtool (syntax, then the unit tests of
// slo-rules.test.yml on synthetic series), and that they read only metrics llmtap registers.
func TestSLORules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", sloRules}, {"test", "rules", sloRulesTest}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	known := registeredMetrics(t)
	var records []string
	for _, doc := range yamlDocs(t, sloRules) {
		for _, g := range dig(doc, "groups").([]any) {
			for _, r := range dig(g, "rules").([]any) {
				if name, ok := dig(r, "record").(string); ok {
					known[name] = true
					records = append(records, name)
				}
			}
		}
	}
	if len(records) == 0 {
		t.Fatal("no recording rules found")
	}
	for _, doc := range yamlDocs(t, sloRules) {
		for _, g := range dig(doc, "groups").([]any) {
			for _, r := range dig(g, "rules").([]any) {
				expr, _ := dig(r, "expr").(string)
				if _, unknown := unknownMetrics(expr, known); len(unknown) > 0 {
					t.Errorf("rule %v reads %v, which llmtap does not register", r, unknown)
				}
			}
		}
	}
}

// TestSLORulesTestsCanFail runs the unit tests against a copy of the rules whose fast-burn
// thresholds (14.4x and 6x) are ten times higher: the alert they expect must then be missing.
func TestSLORulesTestsCanFail(t *testing.T) {
	bin := promtool(t)
	rules, err := os.ReadFile(sloRules)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.NewReplacer("(14.4 *", "(144 *", "(6 *", "(60 *").Replace(string(rules))
	if n := strings.Count(string(rules), "(14.4 *") + strings.Count(string(rules), "(6 *"); n != 4 {
		t.Fatalf("the rules have %d fast-burn thresholds (14.4x, 6x) to change, want 4", n)
	}
	tests, err := os.ReadFile(sloRulesTest)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{sloRules: broken, sloRulesTest: string(tests)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "test", "rules", sloRulesTest)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "LLMTapSLOFastBurn") {
		t.Fatalf("promtool test rules passed rules whose fast burn never fires (err %v):\n%s", err, out)
	}
}
