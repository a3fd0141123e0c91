package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kcp-carry/kcp-carry/internal/testreport"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// TestRoundTrip: what Write writes, Read reads back unchanged, and the
// document uses the documented field names.
func TestRoundTrip(t *testing.T) {
	want := testreport.Report()
	data, err := want.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "duel.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	pristine := raw["duel"].(map[string]any)["pristine"].(map[string]any)
	for _, k := range []string{"requests", "listsPerSecond", "timeToDeathNanos", "died", "fatal", "timeline"} {
		if _, ok := pristine[k]; !ok {
			t.Errorf("duel.pristine has no %q: %v", k, pristine)
		}
	}
	if raw["schema"] != report.Schema || !report.IsDuel(data) {
		t.Errorf("schema = %v", raw["schema"])
	}
}

func TestParseRejects(t *testing.T) {
	good, err := testreport.Report().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(r *report.Report)) []byte {
		r := testreport.Report()
		f(r)
		data, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not JSON", []byte("goos: linux\n"), "not a duel document"},
		{"unknown field", bytes.Replace(good, []byte(`"schema"`), []byte(`"extra": 1, "schema"`), 1), `not a valid kcp-carry/duel/v1 document: json: unknown field "extra"`},
		{"trailing data", append(append([]byte(nil), good...), []byte("{}")...), "trailing data"},
		{"other version", edit(func(r *report.Report) { r.Schema = "kcp-carry/duel/v9" }), `schema "kcp-carry/duel/v9", want "kcp-carry/duel/v1"`},
		{"swapped shards", edit(func(r *report.Report) { r.Duel.Pristine, r.Duel.Patched = r.Duel.Patched, r.Duel.Pristine }), `duel.pristine: variant "patched", want "pristine"`},
		{"negative lists", edit(func(r *report.Report) { r.Duel.Patched.Lists = -1 }), "duel.patched: inconsistent counts"},
		{"renamed field", bytes.Replace(good, []byte(`"lists": `), []byte(`"listz": `), 1), `json: unknown field "listz"`},
		{"missing field", deleteField(t, good, "duel", "patched", "lists"), "field duel.patched.lists is missing"},
		{"missing nested field", deleteField(t, good, "setup", "goVersion"), "field setup.goVersion is missing"},
		{"alive", edit(func(r *report.Report) { r.Duel.Patched.Alive = time.Hour }), "duel.patched: alive 1h0m0s of a 20s load"},
		{"steps", edit(func(r *report.Report) { r.Scaling.Steps[2].Listers = 2 }), "scaling.steps[2]: 2 listers after 2"},
		{"fatal without death", edit(func(r *report.Report) { r.Duel.Patched.Fatal = r.Duel.Pristine.Fatal }), "duel.patched: a time to death or a fatal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := report.Parse(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := report.Read(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Read of a missing file succeeded")
	}
	if report.IsDuel([]byte(`{"pristine":{"died":true}}`)) || report.IsDuel([]byte("text")) {
		t.Error("IsDuel accepts a document without the schema")
	}
}

// deleteField removes the field at path from the JSON document data.
func deleteField(t *testing.T, data []byte, path ...string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc
	for _, k := range path[:len(path)-1] {
		m = m[k].(map[string]any)
	}
	delete(m, path[len(path)-1])
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDerivedAtRender: rates, totals and ratios in the JSON come from the
// counts; the values a document carries are ignored when it is read.
func TestDerivedAtRender(t *testing.T) {
	var doc map[string]any
	data, err := testreport.Report().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	sl := doc["singleLister"].(map[string]any)
	// Rounds of 300 and 310 LIST/s pristine, 294 and 300 patched, 5 s each.
	if got, want := sl["ratio"].(float64), 594.0/610; got != want {
		t.Errorf("singleLister.ratio = %v, want %v", got, want)
	}
	if got := sl["patched"].(map[string]any)["listsPerSecond"].(float64); got != 297 {
		t.Errorf("singleLister.patched.listsPerSecond = %v, want 297", got)
	}
	pristine := doc["duel"].(map[string]any)["pristine"].(map[string]any)
	pristine["listsPerSecond"] = 1e9
	sl["ratio"] = 7.0
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Parse(edited)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Duel.Pristine.ListsPerSecond(), report.Rate(r.Duel.Pristine.Lists, r.Duel.Pristine.Alive); got != want || got > 1000 {
		t.Errorf("duel.pristine rate %v, want %v from its counts", got, want)
	}
	if got := r.SingleLister.Ratio(); got != 594.0/610 {
		t.Errorf("singleLister ratio %v, want it from the rounds", got)
	}
}

// TestCommittedEvidence: the evidence/duel.json in the repository parses, and
// writing it again gives the same bytes (the derived values included, in
// their places).
func TestCommittedEvidence(t *testing.T) {
	path := filepath.Join("..", "..", "..", "evidence", "duel.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(data), string(again)); diff != "" {
		t.Errorf("%s written again (-committed +written):\n%s", path, diff)
	}
}

func TestTables(t *testing.T) {
	got := testreport.Report().Tables()
	for _, want := range []string{
		"**Duel**: 8 listers (`kcp:0` `v1beta1:` `v1:0` `v1beta1:0:paged` `v1:` `v1beta1:0` `v1::paged` `kcp:`), 2 watchers, 4 writers (mixed); at most 20.0 s or 200,000 requests, against each shard in turn.",
		"| shard | requests | LIST/s | time to death | fatal error |\n|---|--:|--:|---|---|\n",
		"| pristine fork | 3,092 | 800 | 3.5 s | `concurrent map writes` in `handlers.setKCPOriginalAPIVersionAnnotation` |\n",
		"| with the carry | 17,160 | 780 | survived 20.0 s | none |\n",
		"**Single lister**: 1 lister (`v1:0`), no watchers or writers; at most 5.0 s or 100,000 requests; 2 alternating rounds per shard. With the carry a lister gets **0.974×** the pristine fork's LIST/s (297/s against 305/s). Per round: 0.980, 0.968.\n",
		"**Scaling**: listers only, each `v1:0`; at most 5.0 s or 100,000 requests per step, against each shard in turn.\n\n| listers | 1 | 2 | 4 |\n|---|--:|--:|--:|\n",
		"| with the carry, LIST/s | 300 | 600 | 1,200 |\n",
		"| pristine fork, LIST/s | 300 | **died** at 3.0 s (600/s until then) | **died** at 1.0 s (1,200/s until then) |\n",
		"Notes:\n\n- A synthetic report.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := report.Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{3460 * time.Millisecond: "3.5 s", time.Second: "1.0 s", 630 * time.Millisecond: "630 ms", 4 * time.Millisecond: "4 ms", 0: "0 ms"} {
		if got := report.Seconds(d); got != want {
			t.Errorf("Seconds(%s) = %q, want %q", d, got, want)
		}
	}
	if got := (*report.Fatal)(nil).Markdown(); got != "none" {
		t.Errorf("nil fatal = %q", got)
	}
	if got := (&report.Fatal{Signature: "concurrent map read and map write"}).Markdown(); got != "`concurrent map read and map write`" {
		t.Errorf("fatal without frame = %q", got)
	}
}
