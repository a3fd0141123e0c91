package markdown

import "testing"

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"UPSTREAM: <carry>: x": "`UPSTREAM: <carry>: x`",
		"a `b` c":              "``a `b` c``",
		"`x`":                  "`` `x` ``",
		"":                     "`  `",
	} {
		if got := CodeSpan(in); got != want {
			t.Errorf("CodeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFence(t *testing.T) {
	if got, want := Fence("json", "{}\n```\n"), "````json\n{}\n```\n\n````"; got != want {
		t.Errorf("Fence = %q, want %q", got, want)
	}
	if got, want := Fence("", "plain"), "```\nplain\n```"; got != want {
		t.Errorf("Fence = %q, want %q", got, want)
	}
}
