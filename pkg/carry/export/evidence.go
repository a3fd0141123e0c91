package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
)

// evidence is what PR.md's testing section quotes.
type evidence struct {
	verify       *verify.Report
	verifySource string
	suite        *evidenceFile
	benchstat    *evidenceFile
	// suiteSource and benchstatSource name the file looked for.
	suiteSource, benchstatSource string
}

// evidenceFile is a report file quoted verbatim, or a duel document
// (evidence/duel.json) PR.md summarizes.
type evidenceFile struct {
	// Name is the path as given (relative to the repository root when the
	// default was used).
	Name string
	// Text is the content (pretty-printed when JSON); Lang the code fence
	// language ("json" or "").
	Text string
	Lang string
	// Duel is the document when the file is a duel (its "schema" says so);
	// PR.md then shows its summary instead of the text.
	Duel *report.Report
}

func (e *evidence) summary() []Evidence {
	return []Evidence{
		{Name: "verify", Source: e.verifySource, Included: e.verify != nil},
		{Name: "suite", Source: sourceIf(e.suite, e.suiteSource), Included: e.suite != nil},
		{Name: "benchstat", Source: sourceIf(e.benchstat, e.benchstatSource), Included: e.benchstat != nil},
	}
}

func sourceIf(f *evidenceFile, name string) string {
	if f == nil {
		return ""
	}
	return name
}

// loadEvidence reads the evidence files before any work is done, so a bad
// flag fails fast.
func loadEvidence(o Options) (*evidence, error) {
	ev := &evidence{}
	if o.VerifyReport != "" {
		if o.NoVerify {
			return nil, errors.New("--verify-report and --no-verify exclude each other")
		}
		r, err := readVerifyReport(o.VerifyReport, o.Carry.Series())
		if err != nil {
			return nil, err
		}
		ev.verify, ev.verifySource = r, o.VerifyReport
	}
	var err error
	if ev.suite, ev.suiteSource, err = readEvidenceFile(o.Root, "--suite-report", o.SuiteReport, DefaultSuiteReport); err != nil {
		return nil, err
	}
	if ev.benchstat, ev.benchstatSource, err = readEvidenceFile(o.Root, "--benchstat", o.Benchstat, DefaultBenchstat); err != nil {
		return nil, err
	}
	return ev, nil
}

// readVerifyReport reads a `carry verify --json` report and checks that it
// is one (no unknown fields, both runs present), that it covers the packages
// the carry tests, and that it says the carry is verified.
func readVerifyReport(path string, carry map[string]*series.Series) (*verify.Report, error) {
	pkgs := verify.TestedPackages(carry)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--verify-report: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r verify.Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("--verify-report %s: not a `carry verify --json` report: %w", path, err)
	}
	if len(r.Packages) == 0 || len(r.Steps) == 0 {
		return nil, fmt.Errorf("--verify-report %s: not a `carry verify --json` report: it has no package results", path)
	}
	if !slices.Equal(r.Packages, pkgs) {
		return nil, fmt.Errorf("--verify-report %s: covers %s, but the carry's tests are in %s; run `carry verify --json` again",
			path, strings.Join(r.Packages, " "), strings.Join(pkgs, " "))
	}
	if !maps.Equal(r.Series, verify.SeriesHashes(carry)) {
		return nil, fmt.Errorf("--verify-report %s: verified another version of the carry (series hashes differ); run `carry verify --json` again", path)
	}
	if !r.OK() {
		return nil, fmt.Errorf("--verify-report %s: the carry is NOT verified: %s", path, strings.Join(r.Problems, "; "))
	}
	return &r, nil
}

// maxEvidenceLines bounds how much of a report PR.md quotes.
const maxEvidenceLines = 80

// readEvidenceFile reads the file given by flag, or def (relative to root)
// when the flag is empty. A missing default is not an error (nil); a missing
// explicit file is.
func readEvidenceFile(root, flag, given, def string) (*evidenceFile, string, error) {
	name, path := given, given
	if given == "" {
		name, path = def, filepath.Join(root, filepath.FromSlash(def))
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && given == "" {
		return nil, name, nil
	}
	if err != nil {
		return nil, name, fmt.Errorf("%s: %w", flag, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, name, fmt.Errorf("%s %s: the file is empty", flag, path)
	}
	f := &evidenceFile{Name: name}
	if report.IsDuel(data) {
		if f.Duel, err = report.Parse(data); err != nil {
			return nil, name, fmt.Errorf("%s %s: %w", flag, path, err)
		}
	}
	if json.Valid(data) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, data, "", "  "); err != nil {
			return nil, name, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		data, f.Lang = buf.Bytes(), "json"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxEvidenceLines {
		lines = append(lines[:maxEvidenceLines], fmt.Sprintf("... (%d more lines in %s)", len(lines)-maxEvidenceLines, name))
	}
	f.Text = strings.Join(lines, "\n")
	return f, name, nil
}
