package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// payloadLine is one line of a payload file (see the package documentation). Numbers are
// kept as text so they parse exactly and with the same rules as every other format.
type payloadLine struct {
	TimestampMs  *json.Number    `json:"timestamp_ms"`
	RequestID    string          `json:"request_id"`
	Path         string          `json:"path"`
	InputTokens  *json.Number    `json:"input_tokens"`
	OutputTokens *json.Number    `json:"output_tokens"`
	SessionID    string          `json:"session_id"`
	DelayMs      *json.Number    `json:"delay_ms"`
	Payload      json.RawMessage `json:"payload"`
	// PayloadB64 holds the body's exact bytes in standard base64, for a body that is not
	// valid UTF-8 (and so cannot be JSON text); encoding/json decodes it.
	PayloadB64 []byte `json:"payload_b64"`
}

// payloadBody is what the reader looks at inside a request body.
type payloadBody struct {
	Model               string       `json:"model"`
	MaxCompletionTokens *json.Number `json:"max_completion_tokens"`
	MaxTokens           *json.Number `json:"max_tokens"`
}

// payloadsDecoder reads payload files. It uses encoding/json rather than fastjson because the
// body must be handed over byte for byte, which json.RawMessage does.
type payloadsDecoder struct{}

func (payloadsDecoder) decode(line []byte, req *Request) error {
	var pl payloadLine
	if err := json.Unmarshal(line, &pl); err != nil {
		return jsonError(err)
	}
	if pl.TimestampMs == nil {
		return errFieldf("timestamp_ms", "missing")
	}
	var err error
	if req.Timestamp, err = parseOffset([]byte(pl.TimestampMs.String()), time.Millisecond); err != nil {
		return errField("timestamp_ms", err)
	}
	body, field := bytes.TrimSpace(pl.Payload), "payload"
	if pl.PayloadB64 != nil {
		if len(body) > 0 && !bytes.Equal(body, []byte("null")) {
			return errFieldf("payload_b64", "the line has payload too; want one of them")
		}
		body, field = pl.PayloadB64, "payload_b64"
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return errFieldf("payload", "missing")
	}
	if trimmed[0] != '{' {
		return errFieldf(field, "want a JSON object (the request body)")
	}
	var pb payloadBody
	if err := json.Unmarshal(body, &pb); err != nil {
		return errField(field, jsonError(err))
	}
	req.Payload, req.Path, req.Model, req.SessionID = body, pl.Path, pb.Model, pl.SessionID
	if pl.DelayMs != nil {
		if req.Delay, err = parseOffset([]byte(pl.DelayMs.String()), time.Millisecond); err != nil {
			return errField("delay_ms", err)
		}
	}
	if pl.InputTokens != nil {
		if req.InputLength, err = parseCount([]byte(pl.InputTokens.String())); err != nil {
			return errField("input_tokens", err)
		}
	}
	out, field := pl.OutputTokens, "output_tokens"
	if out == nil {
		out, field = pb.MaxCompletionTokens, "payload.max_completion_tokens"
	}
	if out == nil {
		out, field = pb.MaxTokens, "payload.max_tokens"
	}
	if out != nil {
		if req.OutputLength, err = parseCount([]byte(out.String())); err != nil {
			// A body's output limit is the client's, sent verbatim; one above every context
			// window (some clients send 2^31−1) limits nothing more than maxCount does.
			if field == "output_tokens" || !errors.Is(err, errOverMax) {
				return errField(field, err)
			}
			req.OutputLength = maxCount
		}
	}
	return nil
}

// jsonError turns encoding/json's errors into a field error where it names a field.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errFieldf(te.Field, "want %s, got JSON %s", te.Type, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: %v", se)
	}
	return err
}
