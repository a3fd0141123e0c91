package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/carry/series"
	"github.com/kcp-carry/kcp-carry/pkg/carry/verify"
)

// verifyEvidence is the verify run PR.md quotes.
type verifyEvidence struct {
	report *verify.Report
	// source is the file read, or "carry verify" when Run ran it.
	source string
}

// loadVerifyReport reads --verify-report before any work is done, so a bad
// flag fails fast; without one, the report is nil.
func loadVerifyReport(o Options) (*verifyEvidence, error) {
	if o.VerifyReport == "" {
		return &verifyEvidence{}, nil
	}
	if o.NoVerify {
		return nil, fmt.Errorf("--verify-report and --no-verify exclude each other")
	}
	r, err := readVerifyReport(o.VerifyReport, o.Carry.Series())
	if err != nil {
		return nil, err
	}
	return &verifyEvidence{report: r, source: o.VerifyReport}, nil
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
