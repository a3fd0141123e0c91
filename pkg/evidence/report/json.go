package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// The structs hold raw counts only; rates, totals and ratios are derived
// from them. The JSON still carries the derived values, so that a reader of
// duel.json needs no code, but they are written from the counts here and
// ignored when read (documents of every version carry them).

// MarshalJSON writes the run with its "listsPerSecond".
func (r Run) MarshalJSON() ([]byte, error) {
	type plain Run
	return encodeWith(plain(r), derived{"listsPerSecond", r.ListsPerSecond(), "aliveNanos"})
}

// UnmarshalJSON reads a run, ignoring its "listsPerSecond".
func (r *Run) UnmarshalJSON(data []byte) error {
	type plain Run
	return decodeWithout(data, (*plain)(r), "listsPerSecond")
}

// MarshalJSON writes the total with its "listsPerSecond".
func (t Total) MarshalJSON() ([]byte, error) {
	type plain Total
	return encodeWith(plain(t), derived{"listsPerSecond", t.ListsPerSecond(), "aliveNanos"})
}

// MarshalJSON writes the rounds with their totals and ratio.
func (s SingleLister) MarshalJSON() ([]byte, error) {
	type plain SingleLister
	pristine, patched := s.Totals()
	return encodeWith(plain(s),
		derived{"pristine", pristine, ""}, derived{"patched", patched, ""}, derived{"ratio", s.Ratio(), ""})
}

// UnmarshalJSON reads the rounds, ignoring the totals and ratio.
func (s *SingleLister) UnmarshalJSON(data []byte) error {
	type plain SingleLister
	return decodeWithout(data, (*plain)(s), "pristine", "patched", "ratio")
}

// MarshalJSON writes the pair with its "ratio".
func (p RatePair) MarshalJSON() ([]byte, error) {
	type plain RatePair
	return encodeWith(plain(p), derived{"ratio", p.Ratio(), ""})
}

// UnmarshalJSON reads the pair, ignoring its "ratio".
func (p *RatePair) UnmarshalJSON(data []byte) error {
	type plain RatePair
	return decodeWithout(data, (*plain)(p), "ratio")
}

// MarshalJSON writes the rate with its "listsPerSecond".
func (r Rated) MarshalJSON() ([]byte, error) {
	type plain Rated
	return encodeWith(plain(r), derived{"listsPerSecond", r.ListsPerSecond(), ""})
}

// UnmarshalJSON reads the rate, ignoring its "listsPerSecond".
func (r *Rated) UnmarshalJSON(data []byte) error {
	type plain Rated
	return decodeWithout(data, (*plain)(r), "listsPerSecond")
}

// MarshalJSON writes the rounds with their "partial" and "full" summaries.
func (k KCPRatio) MarshalJSON() ([]byte, error) {
	type plain KCPRatio
	return encodeWith(plain(k), derived{"partial", k.Partial(), ""}, derived{"full", k.Full(), ""})
}

// UnmarshalJSON reads the rounds, ignoring the summaries.
func (k *KCPRatio) UnmarshalJSON(data []byte) error {
	type plain KCPRatio
	return decodeWithout(data, (*plain)(k), "partial", "full")
}

// derived is a field written from the counts: its key, its value, and the
// field it follows ("" for the end), where documents have always had it.
type derived struct {
	key   string
	value any
	after string
}

// encodeWith is the JSON object plain encodes to with the derived fields
// added.
func encodeWith(plain any, fields ...derived) ([]byte, error) {
	data, err := json.Marshal(plain)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		value, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		at := bytes.LastIndexByte(data, '}')
		if f.after != "" {
			if at, err = endOfField(data, f.after); err != nil {
				return nil, err
			}
		}
		entry := append([]byte(`,"`+f.key+`":`), value...)
		data = slices.Insert(data, at, entry...)
	}
	return data, nil
}

// endOfField is the offset just past the value of the field key of the
// JSON object obj.
func endOfField(obj []byte, key string) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return 0, err
	}
	for dec.More() {
		name, err := dec.Token()
		if err != nil {
			return 0, err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return 0, err
		}
		if name == key {
			return int(dec.InputOffset()), nil
		}
	}
	return 0, fmt.Errorf("no field %q to write a derived field after", key)
}

// decodeWithout decodes the JSON object data into v, refusing unknown
// fields (Parse's decoder does not pass its strictness on to a type's own
// UnmarshalJSON) but for the derived ones, which it drops.
func decodeWithout(data []byte, v any, derivedKeys ...string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, k := range derivedKeys {
		delete(fields, k)
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// missingField returns an error naming the first field of t (its path,
// e.g. "duel.pristine.lists") that the JSON data lacks, so that a truncated
// or hand-edited document is refused rather than read as zeros. A field
// tagged omitempty may be absent, and so may anything inside a null.
func missingField(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	switch {
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i, item := range items {
			if err := missingField(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Time]():
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			where := name
			if path != "" {
				where = path + "." + name
			}
			raw, ok := fields[name]
			switch {
			case !ok && strings.Contains(opts, "omitempty"):
				continue
			case !ok:
				return fmt.Errorf("field %s is missing", where)
			}
			if err := missingField(raw, f.Type, where); err != nil {
				return err
			}
		}
	}
	return nil
}
