package export

import (
	"strings"
	"testing"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
)

// The committed race-suite-run.json reads, and the race target's text
// quotes the whole suite's run only from it: no paragraph while it is
// empty, one with every figure once it is filled; a file with only some
// figures, or an unknown field, is refused naming what is wrong.
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
	if committed == nil && strings.Contains(string(text), "whole shared e2e suite") {
		t.Errorf("no figures in %s, yet the text quotes a run of the whole suite:\n%s", RaceSuiteFile, text)
	}

	// A run as the file would hold it (figures made up for this test only).
	run, err := parseRaceSuiteRun([]byte(`{
		"kcp": "kcp main at 0123456789ab with the four pull requests", "machine": "4 cores, 16 GiB",
		"result": "passed, no race report", "wall": "50 min", "wallWithoutRace": "30 min",
		"peakRSS": "9 GiB", "peakRSSWithoutRace": "3 GiB", "peakRSSCommand": "grep VmHWM /proc/$(pgrep -x kcp)/status",
		"packages": [{"package": "./test/e2e/apibinding", "race": "400 s", "withoutRace": "200 s"},
		             {"package": "./test/e2e/conformance", "race": "120 s", "withoutRace": "60 s"}],
		"release": {"kcp": "kcp v0.99.0", "result": "no race report", "peakRSS": "8 GiB"}}`))
	if err != nil {
		t.Fatal(err)
	}
	d.RaceSuite = run
	text, err = render("kcp-pr-race-e2e-target.md.tmpl", d)
	if err != nil {
		t.Fatal(err)
	}
	testfs.ContainsAll(t, "the race target's text", string(text),
		"\n\nkcp's whole shared e2e suite, `make test-e2e-shared-minimal-race` without `WHAT` (kcp main at 0123456789ab with the four pull requests, 4 cores, 16 GiB): passed, no race report; 50 min against 30 min for `make test-e2e-shared-minimal`; "+
			"kcp peaked at 9 GiB RSS (3 GiB without `-race`), read with `grep VmHWM /proc/$(pgrep -x kcp)/status`. "+
			"Per package, with and without `-race`: `./test/e2e/apibinding` 400 s / 200 s, `./test/e2e/conformance` 120 s / 60 s. "+
			"For a cherry-pick, on kcp v0.99.0: no race report; kcp peaked at 8 GiB RSS.\n\n",
	)
	if n := strings.Count(string(text), "\n"); n > maxPRLines {
		t.Errorf("with the whole suite's run the text has %d lines, want at most %d", n, maxPRLines)
	}
	complains(t, "the race target's text with the run", kcpTextProblems(string(text)))

	for _, c := range []struct{ json, want string }{
		{`{"wall": "50 min"}`, "not kcp, machine, result, peakRSS, peakRSSCommand, packages: give all or none"},
		{`{"kcp": "k", "machine": "m", "result": "r", "wall": "w", "peakRSS": "p", "peakRSSCommand": "c", "packages": [{"package": "./a", "race": "1 s", "withoutRace": "1 s"}, {"package": "./b", "race": "1 s"}]}`, "1 of 2 packages have a time without -race"},
		{`{"wall": "50 min", "cpus": 4}`, `unknown field "cpus"`},
		{`{"kcp": "k", "machine": "m", "result": "r", "wall": "w", "peakRSS": "p", "peakRSSCommand": "c", "packages": [{"package": "./a", "race": "1 s"}], "release": {"kcp": "v"}}`, "not release.result, release.peakRSS"},
	} {
		if _, err := parseRaceSuiteRun([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.json, err, c.want)
		}
	}
}
