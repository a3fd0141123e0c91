package export

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The measured figures the texts quote (race-suite-run.json,
// watch-cache-off-run.json) are strings as the text shows them, committed
// empty until measured: a text quotes a part only once all its fields are
// set, and a part with only some of them stops the export.

// decodeStrict decodes one JSON value into v, refusing unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// field is one figure by its JSON name.
type field struct{ name, value string }

// unset names the fields that are empty.
func unset(fields []field) []string {
	var names []string
	for _, f := range fields {
		if f.value == "" {
			names = append(names, f.name)
		}
	}
	return names
}

// anySet says whether any field is set.
func anySet(fields []field) bool {
	return len(unset(fields)) < len(fields)
}

// loadFigures parses the embedded figures file named file, naming it in an
// error.
func loadFigures[T any](file string, data []byte, parse func([]byte) (*T, error)) (*T, error) {
	r, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("pkg/carry/export/%s: %w", file, err)
	}
	return r, nil
}
