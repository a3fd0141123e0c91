// Package racereport reads the Go race detector's reports (the text a -race
// binary writes to stderr, or to <log_path>.<pid> with GORACE=log_path=...),
// groups them by the code on each side of the race, and says which ones are
// already known.
//
// A report is
//
//	==================
//	WARNING: DATA RACE
//	Write at 0x00c000124000 by goroutine 8:
//	  runtime.mapassign_faststr()
//	      /usr/local/go/src/internal/runtime/maps/runtime_faststr.go:263 +0x0
//	  main.writer()
//	      /tmp/racy/main.go:10 +0x4c
//
//	Previous read at 0x00c000124000 by main goroutine:
//	  ...
//
//	Goroutine 8 (running) created at:
//	  ...
//	==================
package racereport

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Frame is one function of an access stack.
type Frame struct {
	Func string // e.g. k8s.io/apiserver/pkg/endpoints/handlers.setKCPOriginalAPIVersionAnnotation
	File string
	Line int
}

func (f Frame) String() string {
	if f.File == "" {
		return f.Func
	}
	return fmt.Sprintf("%s (%s:%d)", f.Func, f.File, f.Line)
}

// Access is one side of a race: "Write at 0x... by goroutine 8:" and its stack.
type Access struct {
	Op        string // Read, Write, Previous read, Previous write, Atomic write, ...
	Goroutine string // "goroutine 8" or "main goroutine"
	Frames    []Frame
}

// Report is one "WARNING: DATA RACE" report.
type Report struct {
	// Accesses are the conflicting accesses, the current one first.
	Accesses []Access
	// Text is the report as printed, separators excluded.
	Text string
	// Source names where it was read (a file, or "" for a string).
	Source string
}

var (
	accessRE = regexp.MustCompile(`^(Read|Write|Previous read|Previous write|Atomic read|Atomic write|Previous atomic read|Previous atomic write) at 0x[0-9a-f]+ by (goroutine \d+|main goroutine):$`)
	fileRE   = regexp.MustCompile(`^(\S+?\.(?:go|s|c)):(\d+)(?:\s|$)`)
)

const (
	head      = "WARNING: DATA RACE"
	separator = "=================="
)

// Parse reads every report in r; text outside reports is skipped. A report
// cut off (a process killed while writing it) is kept with what it has.
func Parse(r io.Reader, source string) ([]Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	var (
		out  []Report
		cur  *Report
		acc  *Access
		text strings.Builder
	)
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimRight(text.String(), "\n")
			out = append(out, *cur)
		}
		cur, acc = nil, nil
		text.Reset()
	}
	for sc.Scan() {
		raw := strings.TrimRight(sc.Text(), "\r")
		l := strings.TrimSpace(raw)
		switch {
		case l == head:
			flush()
			cur = &Report{Source: source}
			text.WriteString(l + "\n")
			continue
		case cur == nil:
			continue
		case l == separator:
			flush()
			continue
		}
		text.WriteString(raw + "\n")
		if m := accessRE.FindStringSubmatch(l); m != nil {
			cur.Accesses = append(cur.Accesses, Access{Op: m[1], Goroutine: m[2]})
			acc = &cur.Accesses[len(cur.Accesses)-1]
			continue
		}
		if l == "" || !strings.HasPrefix(raw, " ") {
			acc = nil // "Goroutine 8 (running) created at:" and the like end an access stack
			continue
		}
		if acc == nil {
			continue
		}
		if m := fileRE.FindStringSubmatch(l); m != nil {
			if n := len(acc.Frames); n > 0 && acc.Frames[n-1].File == "" {
				acc.Frames[n-1].File = m[1]
				acc.Frames[n-1].Line, _ = strconv.Atoi(m[2])
			}
			continue
		}
		acc.Frames = append(acc.Frames, Frame{Func: funcName(l)})
	}
	flush()
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", cmp.Or(source, "race report"), err)
	}
	return out, nil
}

// ParseString is Parse of a string.
func ParseString(s string) []Report {
	reps, _ := Parse(strings.NewReader(s), "")
	return reps
}

// LogPrefix is the file name GORACE's log_path gets in a directory: the
// runtime appends ".<pid>".
const LogPrefix = "race"

// Env is the GORACE setting for a server whose reports must not stop it and
// must land in dir, one file per process: dir/race.<pid>.
func Env(dir string) string {
	return "GORACE=halt_on_error=0 log_path=" + filepath.Join(dir, LogPrefix)
}

// ParseDir reads every dir/race.<pid> file Env's setting made. A missing
// directory is an error; an empty one gives no reports.
func ParseDir(dir string) ([]Report, []string, error) {
	files, err := filepath.Glob(filepath.Join(dir, LogPrefix+".*"))
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("race log directory: %w", err)
	}
	sort.Strings(files)
	var out []Report
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, files, err
		}
		reps, err := Parse(fh, f)
		fh.Close()
		if err != nil {
			return nil, files, err
		}
		out = append(out, reps...)
	}
	return out, files, nil
}

// funcName strips the argument list: "pkg.f(0x1, ...)" -> "pkg.f", and
// keeps a method's receiver: "pkg.(*T).m()" -> "pkg.(*T).m".
func funcName(l string) string {
	if strings.HasSuffix(l, ")") {
		if i := strings.LastIndex(l, "("); i > 0 {
			return l[:i]
		}
	}
	return l
}

// runtimeFrame is a frame of the runtime or the race instrumentation rather
// than of the code that raced: map and slice helpers, reflection, copies.
func runtimeFrame(fn string) bool {
	for _, p := range []string{"runtime.", "internal/", "sync/atomic.", "reflect.", "race."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// Top is the access's first frame outside the runtime: the code that made
// the access ("" if the stack was not restored), with a generic type's
// arguments shown as [...]: the runtime names them by shape hashes, which
// change with the code around them.
func (a Access) Top() string {
	for _, f := range a.Frames {
		if !runtimeFrame(f.Func) {
			return withoutTypeArgs(f.Func)
		}
	}
	return ""
}

// withoutTypeArgs replaces each outermost [...] of fn by "[...]":
// "pkg.(*F[go.shape.ab,int]).m" -> "pkg.(*F[...]).m".
func withoutTypeArgs(fn string) string {
	var b strings.Builder
	depth := 0
	for _, r := range fn {
		switch {
		case r == '[':
			if depth == 0 {
				b.WriteString("[...]")
			}
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Key groups reports by the code on each side: the top frame (outside the
// runtime) of each access, sorted and joined by " <-> ", so that the same race
// seen in either order, or at another address, is one group.
func (r Report) Key() string {
	var tops []string
	for _, a := range r.Accesses {
		tops = append(tops, cmp.Or(a.Top(), "?"))
	}
	sort.Strings(tops)
	return strings.Join(tops, " <-> ")
}

// HasFrame reports whether a frame of any access has a function containing substr.
func (r Report) HasFrame(substr string) bool {
	for _, a := range r.Accesses {
		for _, f := range a.Frames {
			if strings.Contains(f.Func, substr) {
				return true
			}
		}
	}
	return false
}

// InPackages reports whether a frame of any access is a function of one of
// pkgs or of a package below it ("k8s.io/apiserver/pkg/storage/cacher"
// matches cacher.(*Cacher).List and cacher/store.f).
func (r Report) InPackages(pkgs ...string) bool {
	for _, a := range r.Accesses {
		for _, f := range a.Frames {
			for _, p := range pkgs {
				if strings.HasPrefix(f.Func, p+".") || strings.HasPrefix(f.Func, p+"/") {
					return true
				}
			}
		}
	}
	return false
}

// CarryPackages are the packages of the carry's verdict: a race with a frame
// in the request handlers or the watch cache is one the carry must not leave.
var CarryPackages = []string{
	"k8s.io/apiserver/pkg/endpoints/handlers",
	"k8s.io/apiserver/pkg/storage/cacher",
}

// Group is the reports of one Key.
type Group struct {
	Key     string
	Reports []Report
}

// GroupByKey groups reports by Key, largest group first, then by key.
func GroupByKey(reps []Report) []Group {
	idx := map[string]int{}
	var gs []Group
	for _, r := range reps {
		k := r.Key()
		i, ok := idx[k]
		if !ok {
			i = len(gs)
			idx[k] = i
			gs = append(gs, Group{Key: k})
		}
		gs[i].Reports = append(gs[i].Reports, r)
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if len(gs[i].Reports) != len(gs[j].Reports) {
			return len(gs[i].Reports) > len(gs[j].Reports)
		}
		return gs[i].Key < gs[j].Key
	})
	return gs
}

// Markdown writes the groups for docs/races.md: the key, the count and the
// first report's stacks.
func Markdown(w io.Writer, gs []Group) {
	for _, g := range gs {
		fmt.Fprintf(w, "### `%s`\n\n%d report(s). The first:\n\n```\n%s\n```\n\n", g.Key, len(g.Reports), g.Reports[0].Text)
	}
}
