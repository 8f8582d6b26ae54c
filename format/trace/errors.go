package trace

import (
	"errors"
	"fmt"
)

// ParseError reports where a trace file is malformed: "file:line: field: what is wrong".
type ParseError struct {
	File  string // the file name given to the reader
	Line  int    // 1-based line number
	Field string // the column or key, empty when the whole line is at fault
	Err   error
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Field, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// fieldError is a decoder's complaint about one field; the reader adds file and line.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }

func errField(field string, err error) error { return &fieldError{field: field, err: err} }

func errFieldf(field, format string, args ...any) error {
	return &fieldError{field: field, err: fmt.Errorf(format, args...)}
}

// at positions a decoder error in the file.
func at(file string, line int, err error) *ParseError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &ParseError{File: file, Line: line, Field: fe.field, Err: fe.err}
	}
	return &ParseError{File: file, Line: line, Err: err}
}
