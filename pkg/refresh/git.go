package refresh

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

// ident is a git author identity with a date.
type ident struct {
	Name, Email string
	// Date is in git's internal format, "@<unix seconds> <+hhmm>".
	Date string
}

func gitDate(t time.Time) string {
	return fmt.Sprintf("@%d %s", t.Unix(), t.Format("-0700"))
}

// baseIdent commits the base tree; it never appears in patch output.
func baseIdent() ident { return ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"} }

// gitRepo runs git in a scratch repository, isolated from user and system
// configuration (diff.noprefix, format.*, hooks, signing, ...) so that the
// generated patches depend only on the trees and the header.
type gitRepo struct {
	dir string
}

func (g *gitRepo) run(ctx context.Context, who *ident, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.dir
	env := []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "LC_ALL" {
			continue
		}
		env = append(env, kv)
	}
	if who != nil {
		env = append(env,
			"GIT_AUTHOR_NAME="+who.Name, "GIT_AUTHOR_EMAIL="+who.Email, "GIT_AUTHOR_DATE="+who.Date,
			"GIT_COMMITTER_NAME="+who.Name, "GIT_COMMITTER_EMAIL="+who.Email, "GIT_COMMITTER_DATE="+who.Date,
		)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func (g *gitRepo) init(ctx context.Context) error {
	_, err := g.run(ctx, nil, "-c", "init.defaultBranch=carry", "init", "-q")
	return err
}

// commitAll records the whole work tree (ignored files too: .gitignore
// files inside a module tree must not hide edits) as a commit.
func (g *gitRepo) commitAll(ctx context.Context, who ident, message string) error {
	if _, err := g.run(ctx, nil, "add", "-A", "-f", "."); err != nil {
		return err
	}
	msgFile, err := os.CreateTemp("", "carry-msg-")
	if err != nil {
		return err
	}
	defer os.Remove(msgFile.Name())
	if _, err := msgFile.WriteString(message); err != nil {
		msgFile.Close()
		return err
	}
	if err := msgFile.Close(); err != nil {
		return err
	}
	_, err = g.run(ctx, &who, "commit", "-q", "--no-verify", "--allow-empty", "--cleanup=whitespace", "-F", msgFile.Name())
	return err
}

// changed stages the work tree and reports whether it differs from HEAD.
func (g *gitRepo) changed(ctx context.Context) (bool, error) {
	if _, err := g.run(ctx, nil, "add", "-A", "-f", "."); err != nil {
		return false, err
	}
	out, err := g.run(ctx, nil, "status", "--porcelain")
	if err != nil {
		return false, err
	}
	return len(bytes.TrimSpace(out)) > 0, nil
}

// formatPatch renders HEAD as a patch file. --zero-commit and
// --no-signature drop the commit hash and the git version. --abbrev=7 pins
// the index line length (git only lengthens it to stay unique, and the
// scratch repository's objects are a function of the inputs, so the output
// is too). The explicit prefixes match the a/ b/ the series expects.
func (g *gitRepo) formatPatch(ctx context.Context) ([]byte, error) {
	return g.run(ctx, nil, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature",
		"--abbrev=7", "--src-prefix=a/", "--dst-prefix=b/", "HEAD")
}

var identRE = regexp.MustCompile(`^(.*) <(.*)> (\d+) ([+-]\d{4})$`)

// userIdent is the author identity git would use in dir (from the user's
// configuration and GIT_AUTHOR_* variables), with the current date.
func userIdent(ctx context.Context, dir string) (ident, error) {
	cmd := exec.CommandContext(ctx, "git", "var", "GIT_AUTHOR_IDENT")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return ident{}, fmt.Errorf("finding the patch author (git var GIT_AUTHOR_IDENT): %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	m := identRE.FindStringSubmatch(strings.TrimSpace(string(out)))
	if m == nil {
		return ident{}, fmt.Errorf("finding the patch author: unexpected git ident %q", strings.TrimSpace(string(out)))
	}
	return ident{Name: m[1], Email: m[2], Date: "@" + m[3] + " " + m[4]}, nil
}
