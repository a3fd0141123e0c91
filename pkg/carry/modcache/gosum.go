package modcache

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/module"
)

// GoSum holds the zip hashes (the lines without "/go.mod") of a go.sum file.
type GoSum struct {
	Path string
	zips map[module.Version]string
}

// ReadGoSum parses a go.sum file. Malformed lines are errors naming the
// file and line, as the go command would reject them too.
func ReadGoSum(path string) (*GoSum, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading go.sum: %w", err)
	}
	return ParseGoSum(path, data)
}

// ParseGoSum parses go.sum content; path is used in error messages only.
func ParseGoSum(path string, data []byte) (*GoSum, error) {
	s := &GoSum{Path: path, zips: map[module.Version]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: malformed line: want \"<module> <version> <hash>\", got %d fields", path, n, len(fields))
		}
		modPath, version, hash := fields[0], fields[1], fields[2]
		version, isGoMod := strings.CutSuffix(version, "/go.mod")
		if err := module.Check(modPath, version); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if !strings.HasPrefix(hash, "h1:") {
			// Other hash algorithms may appear one day; the go command ignores
			// them too, and we only know how to check h1.
			continue
		}
		if isGoMod {
			continue
		}
		m := module.Version{Path: modPath, Version: version}
		if prev, ok := s.zips[m]; ok && prev != hash {
			return nil, fmt.Errorf("%s:%d: second, different h1 hash for %s@%s", path, n, modPath, version)
		}
		s.zips[m] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return s, nil
}

// ZipHash returns the h1: hash go.sum records for the zip of m, or an error
// naming go.sum and the module when there is none.
func (s *GoSum) ZipHash(m module.Version) (string, error) {
	h, ok := s.zips[m]
	if !ok {
		return "", fmt.Errorf("%s has no h1: line for %s@%s; add it with `go mod download %s@%s` (and check it against the checksum database)",
			s.Path, m.Path, m.Version, m.Path, m.Version)
	}
	return h, nil
}
