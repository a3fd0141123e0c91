package export

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
)

// Identity is the person who submits the export: the author of every patch
// it writes and, with Options.Signoff, the one who signs them off. The
// committed patches carry no identity; the export never invents one.
type Identity struct {
	Name, Email string
}

// String is the identity as git writes it: Name <email>.
func (id Identity) String() string { return id.Name + " <" + id.Email + ">" }

// header is the identity as git format-patch writes From:: the name as it
// is, RFC 2047-encoded when it is not ASCII, quoted when it has a character
// special in mail addresses.
func (id Identity) header() string {
	name := id.Name
	switch {
	case strings.IndexFunc(name, func(r rune) bool { return r >= utf8.RuneSelf }) >= 0:
		name = mime.QEncoding.Encode("UTF-8", name)
	case strings.ContainsAny(name, `()<>[]:;@\,."`):
		name = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `"`
	}
	return name + " <" + id.Email + ">"
}

// errNoIdentity says how to give the export a person.
var errNoIdentity = errors.New(`no author for the patches: give --author "Your Name <you@example.com>", or set git config user.name and user.email; the person who submits the pull requests must be their author`)

// ParseIdentity reads "Name <email>", as --author takes it.
func ParseIdentity(s string) (Identity, error) {
	a, err := mail.ParseAddress(s)
	if err != nil {
		return Identity{}, fmt.Errorf("--author %q: want \"Name <email>\": %w", s, err)
	}
	if strings.TrimSpace(a.Name) == "" {
		return Identity{}, fmt.Errorf("--author %q: want \"Name <email>\": the name is missing", s)
	}
	return Identity{Name: a.Name, Email: a.Address}, nil
}

// UserIdentity is the person git is configured for in dir (git config
// user.name and user.email). Unlike `git var GIT_AUTHOR_IDENT` it never falls
// back to a name made from the account and host: with either unset it
// returns an error that says how to set them.
func UserIdentity(ctx context.Context, dir string) (Identity, error) {
	get := func(key string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", "config", "--get", key)
		cmd.Dir = dir
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 {
			return "", nil // unset
		}
		if err != nil {
			return "", fmt.Errorf("git config --get %s in %s: %w", key, dir, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	name, err := get("user.name")
	if err != nil {
		return Identity{}, err
	}
	email, err := get("user.email")
	if err != nil {
		return Identity{}, err
	}
	if name == "" || email == "" {
		return Identity{}, errNoIdentity
	}
	return Identity{Name: name, Email: email}, nil
}

// stampIdentity makes who the author of a git format-patch file and, with
// signoff, adds who's Signed-off-by, as `git format-patch -s` does for the
// person running it.
func stampIdentity(data []byte, who Identity, signoff bool) ([]byte, error) {
	signer := ""
	if signoff {
		signer = who.String()
	}
	return series.SetAuthor(data, who.header(), signer)
}

// stampPatch writes p with the submitter's identity (stampIdentity) into dir
// and returns it parsed.
func stampPatch(p *series.Patch, who Identity, signoff bool, dir string) (*series.Patch, error) {
	data, err := stampIdentity(p.Data, who, signoff)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, p.Name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	out, err := series.ParsePatch(path, data)
	if err != nil {
		return nil, err
	}
	out.Name = p.Name
	return out, nil
}
