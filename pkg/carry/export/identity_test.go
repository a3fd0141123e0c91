package export

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

func TestParseIdentity(t *testing.T) {
	if got, err := ParseIdentity("A U Thor <author@example.com>"); err != nil || got != submitter {
		t.Errorf("ParseIdentity = %+v, %v", got, err)
	}
	for in, want := range map[string]string{
		"author@example.com":   "the name is missing",
		"A U Thor":             `want "Name <email>"`,
		"A U Thor <no-domain>": `want "Name <email>"`,
	} {
		if _, err := ParseIdentity(in); err == nil || !strings.Contains(err.Error(), "--author "+`"`+in+`"`) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseIdentity(%q) = %v, want an error naming --author and %q", in, err, want)
		}
	}
}

// TestUserIdentity reads git config user.name and user.email, and never
// makes up an identity when they are unset.
func TestUserIdentity(t *testing.T) {
	testfs.NeedCommands(t, "git", "go")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	repo := t.TempDir()
	git(t, repo, "init", "-q")
	ctx := context.Background()
	if _, err := UserIdentity(ctx, repo); err == nil || !strings.Contains(err.Error(), "give --author") || !strings.Contains(err.Error(), "git config user.name and user.email") {
		t.Errorf("without configuration: %v", err)
	}
	git(t, repo, "config", "user.name", "A U Thor")
	if _, err := UserIdentity(ctx, repo); err == nil {
		t.Errorf("without user.email: no error")
	}
	git(t, repo, "config", "user.email", "author@example.com")
	if got, err := UserIdentity(ctx, repo); err != nil || got != submitter {
		t.Errorf("UserIdentity = %+v, %v", got, err)
	}
}

const unsignedPatch = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Somebody Else
 <else@example.com>
Date: Thu, 1 Jan 2026 01:00:00 +0100
Subject: [PATCH] UPSTREAM: <carry>: x: y

Why.

What.
---
 x.go | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/x.go b/x.go
--- a/x.go
+++ b/x.go
@@ -1 +1 @@
-a
+b
`

func TestStampIdentity(t *testing.T) {
	got, err := stampIdentity([]byte(unsignedPatch), submitter, false)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(unsignedPatch, "From: Somebody Else\n <else@example.com>\n", "From: A U Thor <author@example.com>\n", 1)
	if string(got) != want {
		t.Errorf("without signoff:\n%s\nwant:\n%s", got, want)
	}

	signed, err := stampIdentity([]byte(unsignedPatch), submitter, true)
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "signed", string(signed), "\nWhat.\n\nSigned-off-by: A U Thor <author@example.com>\n---\n x.go")
	// Signing twice adds nothing; a trailer block gets the line appended.
	if again, _ := stampIdentity(signed, submitter, true); string(again) != string(signed) {
		t.Errorf("signed twice:\n%s", again)
	}
	trailer := strings.Replace(unsignedPatch, "What.\n---", "What.\n\nCo-authored-by: B <b@example.com>\n---", 1)
	got, _ = stampIdentity([]byte(trailer), submitter, true)
	testfs.ContainsAll(t, "trailer", string(got), "\nCo-authored-by: B <b@example.com>\nSigned-off-by: A U Thor <author@example.com>\n---\n")

	// Names as git writes them in From:.
	for name, want := range map[string]string{
		"Jörg Thor":   "From: =?UTF-8?q?J=C3=B6rg_Thor?= <author@example.com>\n",
		"Thor, A. U.": "From: \"Thor, A. U.\" <author@example.com>\n",
	} {
		got, _ := stampIdentity([]byte(unsignedPatch), Identity{Name: name, Email: "author@example.com"}, false)
		testfs.ContainsAll(t, name, string(got), want)
	}
	if _, err := stampIdentity([]byte("no headers"), submitter, false); err == nil {
		t.Errorf("a file that is no patch was stamped")
	}
}
