package refresh

import (
	"bytes"
	"context"
	"os"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/util/gitexec"
)

// patchIdent commits the refreshed patch, with its date; the patch file
// keeps only the date (RemoveAuthor drops the From: header).
func patchIdent(date time.Time) gitexec.Ident {
	return gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: gitexec.Date(date)}
}

// baseIdent commits the base tree; it never appears in patch output.
func baseIdent() gitexec.Ident {
	return gitexec.Ident{Name: "carry", Email: "carry@localhost", Date: "@0 +0000"}
}

// gitRepo is the scratch repository in which the refreshed patch is
// generated; gitexec isolates it so that the patch depends only on the
// trees and the header.
type gitRepo struct {
	gitexec.Repo
}

func (g *gitRepo) init(ctx context.Context) error {
	_, err := g.Run(ctx, "-c", "init.defaultBranch=carry", "init", "-q")
	return err
}

// commitAll records the whole work tree (ignored files too: .gitignore
// files inside a module tree must not hide edits) as a commit.
func (g *gitRepo) commitAll(ctx context.Context, who gitexec.Ident, message string) error {
	if _, err := g.Run(ctx, "add", "-A", "-f", "."); err != nil {
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
	_, err = g.With(who.Env()...).Run(ctx, "commit", "-q", "--no-verify", "--allow-empty", "--cleanup=whitespace", "-F", msgFile.Name())
	return err
}

// changed stages the work tree and reports whether it differs from HEAD.
func (g *gitRepo) changed(ctx context.Context) (bool, error) {
	if _, err := g.Run(ctx, "add", "-A", "-f", "."); err != nil {
		return false, err
	}
	out, err := g.Run(ctx, "status", "--porcelain")
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
	return g.Run(ctx, "format-patch", "-1", "--stdout", "--zero-commit", "--no-signature",
		"--abbrev=7", "--src-prefix=a/", "--dst-prefix=b/", "HEAD")
}
