package cmdline

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type testOptions struct {
	n                    int
	completed            bool
	completeErr, badFlag error
}

func (o *testOptions) AddFlags(fs *pflag.FlagSet) { fs.IntVar(&o.n, "n", 1, "a number") }
func (o *testOptions) Complete() error {
	o.completed = true
	return o.completeErr
}
func (o *testOptions) Validate() error {
	if o.n < 0 {
		return errors.New("--n: must not be negative")
	}
	return o.badFlag
}

func TestParse(t *testing.T) {
	o := &testOptions{}
	if err := Parse("t", o, []string{"--n", "3"}, "", &strings.Builder{}); err != nil || o.n != 3 || !o.completed {
		t.Errorf("--n 3: %v, %+v", err, o)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--m"}, "unknown flag: --m"},
		{[]string{"--n", "3x"}, `invalid argument "3x" for "--n" flag`},
		{[]string{"-n", "3"}, "unknown shorthand flag: 'n' in -n"},
		{[]string{"--n", "-1"}, "--n: must not be negative"},
		{[]string{"stray"}, `unexpected arguments ["stray"]`},
	} {
		if err := Parse("t", &testOptions{}, tc.args, "", &strings.Builder{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	// Complete's error stops before Validate.
	o = &testOptions{completeErr: errors.New("--n: cannot complete"), badFlag: errors.New("validated")}
	if err := Parse("t", o, nil, "", &strings.Builder{}); err == nil || err.Error() != "--n: cannot complete" {
		t.Errorf("Complete error: %v", err)
	}
	var help strings.Builder
	if err := Parse("t", &testOptions{}, []string{"--help"}, "Usage: t [flags]\n", &help); !errors.Is(err, pflag.ErrHelp) ||
		!strings.HasPrefix(help.String(), "Usage: t [flags]\n") || !strings.Contains(help.String(), "--n int") {
		t.Errorf("--help: %v\n%s", err, help.String())
	}
}

type codeRunner int

func (c codeRunner) Run(ctx context.Context, stdout, stderr io.Writer) int {
	if ctx.Err() != nil {
		return -1
	}
	return int(c)
}

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parseErr error
		want     int
		stderr   string
	}{
		{"help", pflag.ErrHelp, 0, ""},
		{"usage", errors.New("--n: must not be negative"), 7, "cmd: --n: must not be negative\n(see cmd --help)\n"},
		{"run", nil, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			if got := run("cmd", codeRunner(3), tc.parseErr, 7, &stdout, &stderr); got != tc.want {
				t.Errorf("exit code %d, want %d", got, tc.want)
			}
			if stderr.String() != tc.stderr {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.stderr)
			}
		})
	}
}

// TestListVar: items trimmed, empty ones dropped, the first use replaces
// the default and repeats append; the default shows in --help.
func TestListVar(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"root"}},
		{[]string{"--clusters", " a, b,,c "}, []string{"a", "b", "c"}},
		{[]string{"--clusters", "a", "--clusters", "b,c"}, []string{"a", "b", "c"}},
		{[]string{"--clusters", ""}, nil},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var got []string
		ListVar(fs, &got, "clusters", []string{"root"}, "logical clusters")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
		if d := fs.Lookup("clusters").DefValue; d != "root" {
			t.Errorf("default shown as %q", d)
		}
	}
}
