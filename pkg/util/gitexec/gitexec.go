// Package gitexec runs git in scratch repositories that carry generates
// (refresh's diff repository, export's fork repository), isolated from the
// user's and the system's configuration (diff.noprefix, format.*,
// am.threeWay, hooks, signing, ...), the locale and the time zone, so that
// the patches written depend only on the trees, the patches and the
// identities given.
package gitexec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// Ident is a git identity with a date.
type Ident struct {
	Name, Email string
	// Date is in git's internal format, "@<unix seconds> <+hhmm>" (see Date).
	Date string
}

// Date spells t in git's internal date format, keeping its zone offset.
func Date(t time.Time) string {
	return fmt.Sprintf("@%d %s", t.Unix(), t.Format("-0700"))
}

// Env is the environment that makes id both the author and the committer.
func (id Ident) Env() []string {
	return []string{
		"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email, "GIT_AUTHOR_DATE=" + id.Date,
		"GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email, "GIT_COMMITTER_DATE=" + id.Date,
	}
}

// Repo runs git in Dir.
type Repo struct {
	Dir string
	// Env is added to the isolated environment, e.g. an Ident's Env.
	Env []string
}

// With returns a copy of r whose runs also have env.
func (r Repo) With(env ...string) Repo {
	r.Env = append(append([]string(nil), r.Env...), env...)
	return r
}

// isolation replaces every GIT_* variable, the locale and the time zone
// of the caller's environment.
var isolation = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "TZ=UTC"}

// stderrTailLines is how much of git's stderr an error quotes.
const stderrTailLines = 20

// Run runs git with args in r.Dir and returns its stdout. Hooks never run
// (core.hooksPath=/dev/null). An error names the command and the
// directory and quotes the end of git's stderr (or stdout, when git said
// nothing on stderr).
func (r Repo) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = r.Dir
	env := append([]string(nil), isolation...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "LC_ALL" || k == "TZ" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, r.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := tail(stderr.String(), stderrTailLines)
		if msg == "" {
			msg = tail(stdout.String(), stderrTailLines)
		}
		return nil, fmt.Errorf("git %s (in %s): %v: %s", strings.Join(args, " "), r.Dir, err, msg)
	}
	return stdout.Bytes(), nil
}

// tail is the last n lines of s, trimmed.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

var identRE = regexp.MustCompile(`^(.*) <(.*)> (\d+) ([+-]\d{4})$`)

// UserIdent is the author identity git would use in dir, from the user's
// configuration and GIT_AUTHOR_* variables (so, unlike Repo.Run, not
// isolated), with the current date.
func UserIdent(ctx context.Context, dir string) (Ident, error) {
	cmd := exec.CommandContext(ctx, "git", "var", "GIT_AUTHOR_IDENT")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Ident{}, fmt.Errorf("finding the patch author (git var GIT_AUTHOR_IDENT in %s): %v: %s", dir, err, tail(stderr.String(), stderrTailLines))
	}
	m := identRE.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return Ident{}, fmt.Errorf("finding the patch author: unexpected git ident %q", strings.TrimSpace(string(out)))
	}
	return Ident{Name: m[1], Email: m[2], Date: "@" + m[3] + " " + m[4]}, nil
}
