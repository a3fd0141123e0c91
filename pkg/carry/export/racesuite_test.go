package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// The committed race-suite-run.json reads, and the race target's text and
// appendix quote the whole suite's run only from it: no row and no appendix
// while it is empty, a row per tree in the text's table and a row per
// package in the appendix once it is filled; a file with only some figures,
// or an unknown field, is refused naming what is wrong.
func TestRaceSuiteRun(t *testing.T) {
	committed, err := loadRaceSuiteRun()
	if err != nil {
		t.Fatal(err)
	}
	d := prData{KCP: &KCPPRResult{Name: "4-race-e2e-target"}, RaceSuite: committed}
	text, err := render("kcp-pr-race-e2e-target.md.tmpl", d)
	if err != nil {
		t.Fatal(err)
	}
	if committed == nil && strings.Contains(string(text), "| whole suite") {
		t.Errorf("no figures in %s, yet the text quotes a run of the whole suite:\n%s", RaceSuiteFile, text)
	}
	complains(t, "the committed race target's text", kcpTextLengthProblems(string(text)))

	// Without figures: no whole-suite row, and an empty appendix (which
	// the export does not write).
	d.RaceSuite = nil
	text, err = render("kcp-pr-race-e2e-target.md.tmpl", d)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "| whole suite") {
		t.Errorf("without figures the text has a whole-suite row:\n%s", text)
	}
	if appendix, err := render("kcp-appendix-race-e2e-target.md.tmpl", d); err != nil || strings.TrimSpace(string(appendix)) != "" {
		t.Errorf("without figures the appendix is %q, %v; want it empty", appendix, err)
	}

	// A run as the file would hold it (figures made up for this test only).
	run, err := parseRaceSuiteRun([]byte(`{
		"kcp": "kcp main at 0123456789ab with the four pull requests", "tree": "kcp main", "machine": "4 cores, 16 GiB",
		"result": "passed, no race report", "failed": "0", "raceReports": "0", "wall": "50 min", "wallWithoutRace": "30 min",
		"peakRSS": "9 GiB", "peakRSSWithoutRace": "3 GiB", "peakRSSCommand": "grep VmHWM /proc/$(pgrep -x kcp)/status",
		"packages": [{"package": "apibinding", "race": "400 s", "withoutRace": "200 s"},
		             {"package": "conformance", "race": "120 s", "withoutRace": "60 s", "failure": "a wait"}],
		"release": {"kcp": "kcp v0.99.0 with the four pull requests", "tree": "kcp v0.99.0", "result": "no race report",
		            "failed": "1", "raceReports": "0", "wall": "45 min", "peakRSS": "8 GiB"}}`))
	if err != nil {
		t.Fatal(err)
	}
	d.RaceSuite = run
	text, err = render("kcp-pr-race-e2e-target.md.tmpl", d)
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "the race target's text", string(text),
		"\n| whole suite, kcp main, 2 shared cores | 0 failed | 0 | 50 min | 9 GiB |\n| whole suite, kcp v0.99.0, 2 shared cores | 1 failed | 0 | 45 min | 8 GiB |\n",
		"first comment",
	)
	complains(t, "the race target's text with the run", slices.Concat(kcpTextProblems(string(text)), kcpTextLengthProblems(string(text))))
	appendix, err := render("kcp-appendix-race-e2e-target.md.tmpl", d)
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "the race target's appendix", string(appendix),
		"kcp main at 0123456789ab with the four pull requests; 4 cores, 16 GiB. Result: passed, no race report; kcp's peak RSS 9 GiB, read with `grep VmHWM /proc/$(pgrep -x kcp)/status`. On kcp v0.99.0 with the four pull requests: no race report; 45 min, kcp's peak RSS 8 GiB.\n",
		"| package | time | without `-race` | result |\n",
		"| `apibinding` | 400 s | 200 s | ok |\n| `conformance` | 120 s | 60 s | failed: a wait |\n",
	)
	complains(t, "the race target's appendix", slices.Concat(standAloneProblems(string(appendix)), kcpTextProblems(string(appendix)), kcpTextLengthProblems(string(appendix))))

	for _, c := range []struct{ json, want string }{
		{`{"wall": "50 min"}`, "not kcp, tree, machine, result, failed, raceReports, peakRSS, peakRSSCommand, packages: give all or none"},
		{`{"kcp": "k", "tree": "t", "machine": "m", "result": "r", "failed": "0", "raceReports": "0", "wall": "w", "peakRSS": "p", "peakRSSCommand": "c", "packages": [{"package": "./a", "race": "1 s", "withoutRace": "1 s"}, {"package": "./b", "race": "1 s"}]}`, "1 of 2 packages have a time without -race"},
		{`{"wall": "50 min", "cpus": 4}`, `unknown field "cpus"`},
		{`{"kcp": "k", "tree": "t", "machine": "m", "result": "r", "failed": "0", "raceReports": "0", "wall": "w", "peakRSS": "p", "peakRSSCommand": "c", "packages": [{"package": "./a", "race": "1 s"}], "release": {"kcp": "v"}}`, "not release.tree, release.result, release.failed, release.raceReports, release.wall, release.peakRSS"},
	} {
		if _, err := parseRaceSuiteRun([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}
