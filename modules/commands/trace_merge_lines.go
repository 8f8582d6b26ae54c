package commands

import "fmt"

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
