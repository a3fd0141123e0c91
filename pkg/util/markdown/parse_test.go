package markdown

import (
	"slices"
	"testing"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Is your kcp affected?":                      "is-your-kcp-affected",
		"The `carry` command":                        "the-carry-command",
		"kcp main in full: `make test-kcp-main`":     "kcp-main-in-full-make-test-kcp-main",
		"Where kcp's CPU and memory go: the profile": "where-kcps-cpu-and-memory-go-the-profile",
		"Part of the carry: `--without`":             "part-of-the-carry---without",
		"snake_case and a [link](x.md)":              "snake_case-and-a-link",
		"Ünïcode stays":                              "ünïcode-stays",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	doc := Parse("# Top\n\n" +
		"## Cost\n\n## Cost\n\n## Cost-1\n\n## Cost ##\n\n" +
		"#not a heading\n\n" +
		"See [the table](docs/a.md#cost), [b](<b.md> \"title\") and `[not](a-link.md)`.\n" +
		"A span that `make\ntest-race` wraps, ``a `tick` inside``, a lone ` tick.\n\n" +
		"| `carry pins` | [c](c.md) |\n| `x | y |\n\n" +
		"```sh\n# not a heading\nmake test   # [not](a-link.md)\n```\n" +
		"~~~\n```\nstill code\n~~~\n")
	if want := []string{"top", "cost", "cost-1", "cost-1-1", "cost-2"}; !slices.Equal(doc.Anchors, want) {
		t.Errorf("anchors %q, want %q", doc.Anchors, want)
	}
	if want := []Ref{{13, "docs/a.md#cost", false}, {13, "b.md", false}, {17, "c.md", false}}; !slices.Equal(doc.Links, want) {
		t.Errorf("links %v, want %v", doc.Links, want)
	}
	want := []Ref{
		{13, "[not](a-link.md)", false}, {14, "make test-race", false}, {15, "a `tick` inside", false},
		{17, "carry pins", false},
		{21, "# not a heading", true}, {22, "make test   # [not](a-link.md)", true},
		{25, "```", true}, {26, "still code", true},
	}
	if !slices.Equal(doc.Code, want) {
		t.Errorf("code %v, want %v", doc.Code, want)
	}
}
