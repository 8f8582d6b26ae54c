package commands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/llmtap/llmtap/shadow/trace"
)

// maxMergeLine bounds one line of a records or payloads file in a merge. The recorder's
// payload lines are bounded by its max_body (64 MiB at most), a record line by the record's
// own bounded fields; a longer line is not one the recorder wrote.
const maxMergeLine = 65 << 20

// payloadPrefix is how the recorder begins every payload line (telemetry/recorder's
// appendPayload): the merge rewrites the number after it and keeps the rest of the line,
// payload included, byte for byte.
var payloadPrefix = []byte(`{"timestamp_ms": `)

// mergeKind returns the one kind (trace, records or payloads) of the files of a merge.
func mergeKind(paths []string) (string, error) {
	var kind string
	for _, p := range paths {
		k, _, err := recordingFile(p)
		if err != nil {
			return "", err
		}
		if kind != "" && k != kind {
			return "", fmt.Errorf("%s is a %s file and %s a %s file: merge files of one kind at a time", paths[0], kind, p, k)
		}
		kind = k
	}
	return kind, nil
}

// mergedLine is one line of a records or payloads merge, at its request's absolute arrival.
type mergedLine struct {
	at   time.Time
	line []byte // without its newline
	// ms is where the payload line's timestamp_ms number ends (0 for a record line).
	ms int
}

// mergeLines reads records or payloads files of any number of instances and rotations and
// returns their lines in order of the request's absolute arrival (file order, then line order,
// for equal times). Record lines are kept byte for byte (each carries its RFC 3339 start).
// Payload lines are rebased to the earliest request, as `trace merge` rebases a trace: each
// line's absolute arrival is its file's start plus its timestamp_ms, and only that number is
// rewritten.
func mergeLines(kind string, paths []string, skipBad bool) ([]mergedLine, trace.Info, error) {
	var all []mergedLine
	var info trace.Info
	var p fastjson.Parser
	for _, path := range paths {
		_, start, err := recordingFile(path)
		if err != nil {
			return nil, info, err
		}
		err = eachLine(path, &info, func(line []byte) error {
			v, err := p.ParseBytes(line)
			if err != nil {
				return err
			}
			var m mergedLine
			switch kind {
			case "records":
				s := v.GetStringBytes("start")
				if s == nil {
					return errors.New(`no "start" string`)
				}
				if m.at, err = time.Parse(time.RFC3339Nano, string(s)); err != nil {
					return fmt.Errorf("start: %w", err)
				}
			case "payloads":
				if !bytes.HasPrefix(line, payloadPrefix) {
					return fmt.Errorf("does not begin with %s as the recorder writes it", payloadPrefix)
				}
				ms := v.GetFloat64("timestamp_ms")
				if ms < 0 || math.IsNaN(ms) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
					return fmt.Errorf("timestamp_ms %v out of range", ms)
				}
				m.at = start.Add(time.Duration(ms * float64(time.Millisecond)))
				m.ms = len(payloadPrefix) + bytes.IndexByte(line[len(payloadPrefix):], ',')
				if m.ms < len(payloadPrefix) {
					return errors.New("no field after timestamp_ms")
				}
			}
			m.line = slices.Clone(line)
			all = append(all, m)
			return nil
		}, skipBad)
		if err != nil {
			return nil, info, err
		}
	}
	slices.SortStableFunc(all, func(a, b mergedLine) int { return a.at.Compare(b.at) })
	if kind == "payloads" && len(all) > 0 {
		t0 := all[0].at
		for i := range all {
			m := &all[i]
			ms := strconv.AppendFloat(slices.Clone(payloadPrefix), float64(m.at.Sub(t0).Microseconds())/1000, 'f', -1, 64)
			m.line = append(ms, m.line[m.ms:]...)
		}
	}
	return all, info, nil
}

// eachLine calls fn with every complete line of the file at path. A last line without its
// newline was cut off while being written and is counted as torn; a line fn rejects stops the
// merge with the file and line, or is counted and skipped with skipBad.
func eachLine(path string, info *trace.Info, fn func(line []byte) error, skipBad bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var stop error // fn's error, already naming the file and line
	err = trace.EachLine(f, maxMergeLine, func(n int, line []byte, terminated bool) error {
		switch {
		case len(bytes.TrimSpace(line)) == 0:
		case !terminated:
			info.Torn++
		default:
			if err := fn(line); err != nil {
				if !skipBad {
					stop = fmt.Errorf("%s:%d: %w", path, n, err)
					return stop
				}
				info.Skipped++
			}
		}
		return nil
	})
	if err != nil && err != stop {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// writeLines writes the merged lines, each with its newline, to out (created 0600 through
// writeFile0600), or to stdout when out is "-".
func writeLines(stdout io.Writer, out string, lines []mergedLine) error {
	write := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		for _, m := range lines {
			bw.Write(m.line)
			bw.WriteByte('\n')
		}
		return bw.Flush()
	}
	if out == "-" {
		return write(stdout)
	}
	return writeFile0600(out, write)
}
