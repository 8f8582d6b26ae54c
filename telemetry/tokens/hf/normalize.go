package hf

import (
	"strings"
	"unicode"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites a segment of text before it is pre-tokenized.
type normalizer interface {
	normalize(s string) (string, error)
}

type unicodeForm struct{ f norm.Form }

func (n unicodeForm) normalize(s string) (string, error) { return n.f.String(s), nil }

type lowercase struct{}

func (lowercase) normalize(s string) (string, error) { return strings.ToLower(s), nil }

type strip struct{ left, right bool }

func (n strip) normalize(s string) (string, error) {
	if n.left {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
	}
	if n.right {
		s = strings.TrimRightFunc(s, unicode.IsSpace)
	}
	return s, nil
}

// prepend puts a string before every non-empty segment (Llama 2's "▁").
type prepend struct{ s string }

func (n prepend) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return n.s + s, nil
}

// replace replaces every match of a literal or a pattern.
type replace struct {
	literal string
	re      *regexp2.Regexp // nil for a literal
	content string
}

func (n replace) normalize(s string) (string, error) {
	if n.re == nil {
		if n.literal == "" {
			return s, nil
		}
		return strings.ReplaceAll(s, n.literal, n.content), nil
	}
	return n.re.ReplaceFunc(s, func(regexp2.Match) string { return n.content }, -1, -1)
}

type normalizers []normalizer

func (ns normalizers) normalize(s string) (string, error) {
	var err error
	for _, n := range ns {
		if s, err = n.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}
