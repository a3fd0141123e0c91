package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
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
	return json.Marshal(struct {
		plain
		ListsPerSecond float64 `json:"listsPerSecond"`
	}{plain(r), r.ListsPerSecond()})
}

// UnmarshalJSON reads a run, ignoring its "listsPerSecond".
func (r *Run) UnmarshalJSON(data []byte) error {
	type plain Run
	return decodeStrict(data, &struct {
		*plain
		ListsPerSecond json.RawMessage `json:"listsPerSecond"`
	}{plain: (*plain)(r)})
}

// MarshalJSON writes the total with its "listsPerSecond".
func (t Total) MarshalJSON() ([]byte, error) {
	type plain Total
	return json.Marshal(struct {
		plain
		ListsPerSecond float64 `json:"listsPerSecond"`
	}{plain(t), t.ListsPerSecond()})
}

// MarshalJSON writes the rounds with their totals and ratio.
func (s SingleLister) MarshalJSON() ([]byte, error) {
	type plain SingleLister
	pristine, patched := s.Totals()
	return json.Marshal(struct {
		plain
		Pristine Total   `json:"pristine"`
		Patched  Total   `json:"patched"`
		Ratio    float64 `json:"ratio"`
	}{plain(s), pristine, patched, s.Ratio()})
}

// UnmarshalJSON reads the rounds, ignoring the totals and ratio.
func (s *SingleLister) UnmarshalJSON(data []byte) error {
	type plain SingleLister
	return decodeStrict(data, &struct {
		*plain
		Pristine json.RawMessage `json:"pristine"`
		Patched  json.RawMessage `json:"patched"`
		Ratio    json.RawMessage `json:"ratio"`
	}{plain: (*plain)(s)})
}

// MarshalJSON writes the pair with its "ratio".
func (p RatePair) MarshalJSON() ([]byte, error) {
	type plain RatePair
	return json.Marshal(struct {
		plain
		Ratio float64 `json:"ratio"`
	}{plain(p), p.Ratio()})
}

// UnmarshalJSON reads the pair, ignoring its "ratio".
func (p *RatePair) UnmarshalJSON(data []byte) error {
	type plain RatePair
	return decodeStrict(data, &struct {
		*plain
		Ratio json.RawMessage `json:"ratio"`
	}{plain: (*plain)(p)})
}

// MarshalJSON writes the rate with its "listsPerSecond".
func (r Rated) MarshalJSON() ([]byte, error) {
	type plain Rated
	return json.Marshal(struct {
		plain
		ListsPerSecond float64 `json:"listsPerSecond"`
	}{plain(r), r.ListsPerSecond()})
}

// UnmarshalJSON reads the rate, ignoring its "listsPerSecond".
func (r *Rated) UnmarshalJSON(data []byte) error {
	type plain Rated
	return decodeStrict(data, &struct {
		*plain
		ListsPerSecond json.RawMessage `json:"listsPerSecond"`
	}{plain: (*plain)(r)})
}

// MarshalJSON writes the rounds with their "partial" and "full" summaries.
func (k KCPRatio) MarshalJSON() ([]byte, error) {
	type plain KCPRatio
	return json.Marshal(struct {
		plain
		Partial RatioSummary `json:"partial"`
		Full    RatioSummary `json:"full"`
	}{plain(k), k.Partial(), k.Full()})
}

// UnmarshalJSON reads the rounds, ignoring the summaries.
func (k *KCPRatio) UnmarshalJSON(data []byte) error {
	type plain KCPRatio
	return decodeStrict(data, &struct {
		*plain
		Partial json.RawMessage `json:"partial"`
		Full    json.RawMessage `json:"full"`
	}{plain: (*plain)(k)})
}

// decodeStrict decodes data into v refusing unknown fields: Parse's decoder
// does not pass its strictness on to a type's own UnmarshalJSON.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
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
