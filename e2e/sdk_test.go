package e2e

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmtap/llmtap/telemetry/record"
)

// goSDKStream streams a chat completion with the official Go SDK from baseURL and returns the
// text the stream carried.
func goSDKStream(t *testing.T, baseURL, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []option.RequestOption{option.WithBaseURL(baseURL + "/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0)}
	if id != "" {
		opts = append(opts, option.WithHeader("X-Request-Id", id))
	}
	c := openai.NewClient(opts...)
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:       model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Once upon a time")},
		MaxTokens:   openai.Int(64),
		Temperature: openai.Float(0),
		Seed:        openai.Int(1),
	})
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("Go SDK stream from %s: %v", baseURL, err)
	}
	return text.String()
}

// TestGoSDK: the official Go SDK streams through llmtap (with and without usage injection) and
// gets the text it gets directly; with injection llmtap still has the server's count.
func TestGoSDK(t *testing.T) {
	direct := goSDKStream(t, env.ollama, "")
	if direct == "" {
		t.Fatal("the direct stream carried no text")
	}
	for _, site := range []struct{ name, url, source string }{
		{"plain", env.plain, record.SourceTokenizer},
		{"inject_usage", env.inject, record.SourceUsage},
	} {
		t.Run(site.name, func(t *testing.T) {
			id := "go-sdk-" + site.name
			if got := goSDKStream(t, site.url, id); got != direct {
				t.Fatalf("through llmtap the SDK got\n  %q\ndirectly\n  %q", got, direct)
			}
			rec := recordOf(t, id)
			// The Go SDK closes the connection as soon as it reads data: [DONE], which can be
			// before reverse_proxy has finished the response: the record must still say the
			// stream completed, not client_canceled.
			if rec.OutputTokensSource != site.source || rec.Error != "" {
				t.Fatalf("record: output tokens %d from %q (want %q), error %q", rec.OutputTokens, rec.OutputTokensSource, site.source, rec.Error)
			}
			if site.source == record.SourceUsage && rec.OutputTokens != 64 {
				t.Errorf("output tokens %d, want the 64 Ollama generated", rec.OutputTokens)
			}
		})
	}
}

// TestNodeSDK: the official npm openai package streams through llmtap with usage injection and
// gets the Go SDK's direct text.
func TestNodeSDK(t *testing.T) {
	if _, err := os.Stat("node/node_modules/openai/package.json"); err != nil {
		t.Fatalf("the npm openai package is not installed in e2e/node (run `make tools`, which runs npm ci there): %v", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	direct := goSDKStream(t, env.ollama, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "stream.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "BASE_URL="+env.inject+"/v1", "MODEL="+model, "REQUEST_ID=node-sdk")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("node stream.mjs: %v\n%s", err, stderr)
	}
	if string(out) != direct {
		t.Fatalf("the npm SDK got through llmtap\n  %q\nthe Go SDK directly\n  %q", out, direct)
	}
	if rec := recordOf(t, "node-sdk"); rec.OutputTokensSource != record.SourceUsage || rec.OutputTokens != 64 {
		t.Fatalf("record: %d output tokens from %q, want 64 from usage", rec.OutputTokens, rec.OutputTokensSource)
	}
}

var textDelta = regexp.MustCompile(`"type":"text_delta","text":"([^"]*)"`)

// TestAnthropicSDK: the official Anthropic Go SDK parses a Messages stream (the mock's) that
// llmtap passed through, and llmtap's record has the stream's usage.
func TestAnthropicSDK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := anthropic.NewClient(aoption.WithBaseURL(env.anthropic), aoption.WithAPIKey("unused"),
		aoption.WithMaxRetries(0), aoption.WithHeader("X-Request-Id", "anthropic-sdk"))
	stream := c.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model:     "claude-mock",
		MaxTokens: 24,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me about the lighthouse keeper."))},
	})
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulating: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("Anthropic SDK stream: %v", err)
	}

	var want strings.Builder
	for _, m := range textDelta.FindAllSubmatch(upstreamBody(t, env.mockTee, "anthropic-sdk"), -1) {
		want.Write(m[1])
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != want.String() || want.Len() == 0 {
		t.Fatalf("the SDK accumulated %+v; the mock sent the text %q", msg.Content, want.String())
	}
	if msg.StopReason != "max_tokens" || msg.Usage.OutputTokens != 24 {
		t.Errorf("stop reason %q, output tokens %d; want max_tokens, 24", msg.StopReason, msg.Usage.OutputTokens)
	}
	tr, ok := env.mock.TraceByID("anthropic-sdk")
	if !ok {
		t.Fatal("the mock has no trace of the request")
	}
	rec := recordOf(t, "anthropic-sdk")
	if rec.API != "anthropic.messages" || rec.Error != "" {
		t.Fatalf("record: api %q, error %q %s", rec.API, rec.Error, rec.ErrorMsg)
	}
	if rec.OutputTokens != 24 || rec.OutputTokensSource != record.SourceUsage ||
		rec.InputTokens != int64(tr.PromptTokens) || rec.InputTokensSource != record.SourceUsage {
		t.Errorf("record: %d in (%s), %d out (%s); the mock sent %d in, 24 out",
			rec.InputTokens, rec.InputTokensSource, rec.OutputTokens, rec.OutputTokensSource, tr.PromptTokens)
	}
	if rec.ContentEvents != 24 {
		t.Errorf("content events %d, want 24 text deltas", rec.ContentEvents)
	}
}
