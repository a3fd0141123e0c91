// Package series reads a carry: a quilt-style `series` file listing
// git format-patch files, each parsed and checked with go-gitdiff.
//
// Layout: staging-patches/<module path>/series names the patches in apply
// order (one file name per line, `#` comments and blank lines allowed), and
// every NNNN-*.patch file next to it must be listed there exactly once.
package series

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"golang.org/x/mod/sumdb/dirhash"
)

// FileName is the name of the file listing the patches in apply order.
const FileName = "series"

// subjectRE is the Kubernetes/OpenShift carry commit convention, so the
// carry can be rebased and exported with the usual tooling.
var subjectRE = regexp.MustCompile(`^UPSTREAM: (revert: )?(([\w.-]+/[\w-.-]+)?: )?(\d+:|<carry>:|<drop>:)`)

// patchNameRE is the file name format-patch-numbered patches must have.
var patchNameRE = regexp.MustCompile(`^[0-9]{4}-[A-Za-z0-9._+-]+\.patch$`)

// CheckSubject reports whether subject follows the UPSTREAM: convention.
func CheckSubject(subject string) error {
	if !subjectRE.MatchString(subject) {
		return fmt.Errorf("subject %q does not match %s", subject, subjectRE)
	}
	return nil
}

// CheckPatchName reports whether name is a valid NNNN-name.patch file name.
func CheckPatchName(name string) error {
	if !patchNameRE.MatchString(name) {
		return fmt.Errorf("patch file name %q does not match %s", name, patchNameRE)
	}
	return nil
}

// Series is one module's carry.
type Series struct {
	// Dir holds the series file and the patches.
	Dir     string
	Patches []*Patch
	// Hash is a dirhash h1: hash of the series file and the listed patches,
	// in order: it changes whenever anything that shapes the patched tree does.
	Hash string
}

// Patch is one parsed git format-patch file.
type Patch struct {
	// Name is the file name as listed in series.
	Name string
	// Path is the file's path (Dir joined with Name).
	Path string
	// SeriesLine is the line of series that lists the patch (0 if unknown).
	SeriesLine int
	Header     *gitdiff.PatchHeader
	Files      []*gitdiff.File
	Data       []byte
}

// Load reads dir/series and every patch it lists. All problems found are
// reported together, each naming the file and, when known, the line. Every
// subject must follow the UPSTREAM: convention (CheckSubject).
func Load(dir string) (*Series, error) { return LoadChecked(dir, CheckSubject) }

// LoadChecked is Load with checkSubject judging each patch's subject: a
// series for another repository follows that repository's convention.
func LoadChecked(dir string, checkSubject func(subject string) error) (*Series, error) {
	seriesPath := filepath.Join(dir, FileName)
	data, err := os.ReadFile(seriesPath)
	if err != nil {
		return nil, fmt.Errorf("reading series: %w", err)
	}
	names, errs := parseSeriesFile(seriesPath, data)

	s := &Series{Dir: dir}
	listed := map[string]bool{}
	for _, n := range names {
		listed[n.name] = true
		path := filepath.Join(dir, n.name)
		pdata, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s:%d: lists %s, which does not exist", seriesPath, n.line, n.name))
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", seriesPath, n.line, err))
			continue
		}
		p, err := parsePatch(path, pdata, checkSubject)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Name = n.name
		p.SeriesLine = n.line
		s.Patches = append(s.Patches, p)
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing patches: %w", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".patch") && !listed[e.Name()] {
			errs = append(errs, fmt.Errorf("%s: not listed in %s", filepath.Join(dir, e.Name()), seriesPath))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	if s.Hash, err = s.hash(data); err != nil {
		return nil, err
	}
	return s, nil
}

// hash is the dirhash of the series file (seriesData) and the patches it lists.
func (s *Series) hash(seriesData []byte) (string, error) {
	files := []string{FileName}
	for _, p := range s.Patches {
		files = append(files, p.Name)
	}
	h, err := dirhash.Hash1(files, func(name string) (io.ReadCloser, error) {
		if name == FileName {
			return io.NopCloser(bytes.NewReader(seriesData)), nil
		}
		for _, p := range s.Patches {
			if p.Name == name {
				return io.NopCloser(bytes.NewReader(p.Data)), nil
			}
		}
		return nil, fmt.Errorf("no patch %s", name)
	})
	if err != nil {
		return "", fmt.Errorf("hashing series in %s: %w", s.Dir, err)
	}
	return h, nil
}

// Without is the series less the patches named in leaveOut (file names): what
// `carry build --without` overlays. Its Hash is that of a series file listing
// the patches kept, so nothing built from it passes for the whole series.
func (s *Series) Without(leaveOut ...string) (*Series, error) {
	out := &Series{Dir: s.Dir}
	var listed strings.Builder
	for _, p := range s.Patches {
		if slices.Contains(leaveOut, p.Name) {
			continue
		}
		out.Patches = append(out.Patches, p)
		fmt.Fprintln(&listed, p.Name)
	}
	var err error
	if out.Hash, err = out.hash([]byte(listed.String())); err != nil {
		return nil, err
	}
	return out, nil
}

type seriesEntry struct {
	name string
	line int
}

func parseSeriesFile(path string, data []byte) ([]seriesEntry, []error) {
	var (
		entries []seriesEntry
		errs    []error
		seen    = map[string]int{}
	)
	lines, err := Lines(data)
	if err != nil {
		errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
	}
	for _, l := range lines {
		n, fields := l.N, l.Fields
		if len(fields) > 1 {
			// quilt allows per-patch options such as -p0; our patches are all
			// git format-patch output applied with -p1.
			errs = append(errs, fmt.Errorf("%s:%d: unsupported options after %s: %q", path, n, fields[0], strings.Join(fields[1:], " ")))
			continue
		}
		name := fields[0]
		if err := CheckPatchName(name); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", path, n, err))
			continue
		}
		if first, ok := seen[name]; ok {
			errs = append(errs, fmt.Errorf("%s:%d: %s listed twice (first at line %d)", path, n, name, first))
			continue
		}
		seen[name] = n
		entries = append(entries, seriesEntry{name: name, line: n})
	}
	return entries, errs
}

// Line is a line of a list file like series that is neither blank nor a `#`
// comment.
type Line struct {
	// N is its number, from 1.
	N int
	// Fields are its words (strings.Fields).
	Fields []string
}

// Lines returns the lines of data that are neither blank nor `#` comments:
// the lines of series and of the other list files kept next to it. The
// lines before a read error are returned with it.
func Lines(data []byte) ([]Line, error) {
	var lines []Line
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lines = append(lines, Line{N: n, Fields: strings.Fields(line)})
	}
	return lines, sc.Err()
}

// ParsePatch parses a git format-patch file whose subject follows the
// UPSTREAM: convention; path names it in errors.
func ParsePatch(path string, data []byte) (*Patch, error) {
	return parsePatch(path, data, CheckSubject)
}

func parsePatch(path string, data []byte, checkSubject func(string) error) (*Patch, error) {
	files, preamble, err := gitdiff.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: malformed patch: %w", path, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: malformed patch: contains no diffs", path)
	}
	header, err := gitdiff.ParsePatchHeader(preamble, gitdiff.WithSubjectCleanMode(gitdiff.SubjectCleanPatchOnly))
	if err != nil {
		return nil, fmt.Errorf("%s: malformed patch header: %w", path, err)
	}
	if header.Title == "" {
		return nil, fmt.Errorf("%s: malformed patch header: no Subject (want git format-patch output)", path)
	}
	if err := checkSubject(header.Title); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, subjectLine(data), err)
	}
	for _, f := range files {
		for _, name := range []string{f.OldName, f.NewName} {
			if name != "" && !filepath.IsLocal(filepath.FromSlash(name)) {
				return nil, fmt.Errorf("%s: malformed patch: path %q leaves the module directory", path, name)
			}
		}
		if f.IsCopy || f.IsRename {
			if f.OldName == "" || f.NewName == "" {
				return nil, fmt.Errorf("%s: malformed patch: copy or rename without both names", path)
			}
		}
	}
	return &Patch{Path: path, Header: header, Files: files, Data: data}, nil
}

// subjectLine finds the Subject: header so errors can point at it.
func subjectLine(data []byte) int {
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "Subject:") {
			return i + 1
		}
	}
	return 0
}

// Names returns the patch file names in series order.
func (s *Series) Names() []string {
	names := make([]string, len(s.Patches))
	for i, p := range s.Patches {
		names[i] = p.Name
	}
	return names
}
