package export

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// kcpPR is the kcp pull request of res whose kcp-patches/ directory is
// <n>-name, or nil.
func kcpPR(res *Result, name string) *KCPPRResult {
	for i, pr := range res.KCPPRs {
		if _, rest, _ := strings.Cut(pr.Name, "-"); rest == name {
			return &res.KCPPRs[i]
		}
	}
	return nil
}

// kcpOrderProblems is what the review asked of kcp's pull requests' order
// and of the texts that depend on it, as the carry has them (the synthetic
// exports have only some): kcp's hack/bump-k8s.sh fixed in a pull request of
// its own, the first, and the pin bump, which names it, changing the script
// no more; the second pin bump, to the fork commit with the watch cache's
// detector, after the first and right before the pull request that sets
// KUBE_WATCHCACHE_MUTATION_DETECTOR in kcp's shared job, which names it
// (or, when the first pin bump's fork version holds the detector, says it
// is not needed); and the race target without a Prow job, with a -timeout.
// read reads a file the export wrote.
func kcpOrderProblems(t *testing.T, res *Result, read func(rel string) string) []string {
	t.Helper()
	var problems []string
	bump, script := kcpPR(res, "pin-bump"), kcpPR(res, "bump-k8s-script")
	merged := slices.Contains(res.ForkVersionIncludes, "detector")
	if bump != nil && len(bump.Touching(KCPBumpScript)) > 0 {
		problems = append(problems, fmt.Sprintf("%s changes %s: the script's fix is a pull request of its own, before it", bump.Dir, KCPBumpScript))
	}
	if script != nil {
		if &res.KCPPRs[0] != script || len(script.Touching(KCPBumpScript)) == 0 || len(script.NotTouching(KCPBumpScript)) > 0 {
			problems = append(problems, fmt.Sprintf("%s: want the first kcp pull request, changing %s and nothing else it does not need (%+v)", script.Dir, KCPBumpScript, script.Patches))
		}
		if bump != nil && !strings.Contains(read(bump.PR), "The pull request `"+script.Patches[0].Subject+"` comes first too") {
			problems = append(problems, fmt.Sprintf("%s: does not say that %s comes first", bump.PR, script.Dir))
		}
	} else if theCarry(t, res, "0-bump-k8s-script") {
		problems = append(problems, "kcp-patches/0-bump-k8s-script is not exported")
	}
	second, detector := kcpPR(res, "detector-pin-bump"), kcpPR(res, "watch-cache-mutation-detector")
	index := func(pr *KCPPRResult) int {
		return slices.IndexFunc(res.KCPPRs, func(p KCPPRResult) bool { return p.Name == pr.Name })
	}
	if second != nil {
		text := read(second.PR)
		if len(second.Patches) > 0 || bump == nil || index(second) < index(bump) {
			problems = append(problems, fmt.Sprintf("%s: want a pull request of kcp's script alone, after the first pin bump", second.Dir))
		}
		if bumps := regexp.MustCompile(`(?m)^BRANCH=v0\.0\.0-<date>-<commit> \./` + regexp.QuoteMeta(KCPBumpScript) + ` `).MatchString(text); bumps == merged {
			problems = append(problems, fmt.Sprintf("%s: the first pin bump holds the detector: %v, and the text bumps with kcp's script: %v (want it to say it is not needed instead)", second.PR, merged, bumps))
		}
	}
	if detector != nil {
		text := read(detector.PR)
		if second == nil || index(detector) != index(second)+1 {
			problems = append(problems, fmt.Sprintf("%s: want it right after the second pin bump (a kcp-patches/<n>-detector-pin-bump)", detector.Dir))
		}
		if want := map[bool]string{false: "It merges after the second pin bump", true: "It merges after the pin bump for #4551"}[merged]; !strings.Contains(text, want) {
			problems = append(problems, fmt.Sprintf("%s: does not name the pin bump it needs (%q)", detector.PR, want))
		}
		// The review asked for the whole shared suite's kcp peak memory, both switches against off, measured
		// (evidence/detector/shared-suite-memory.txt).
		if !regexp.MustCompile(`The whole suite as this job runs it.*kcp's peak RSS [0-9.]+ GiB with both switches against [0-9.]+ GiB off`).MatchString(text) {
			problems = append(problems, detector.PR+": does not give the whole suite's kcp peak RSS with both switches against off")
		}
	}
	if race := kcpPR(res, "race-e2e-target"); race != nil {
		timeout := false
		for _, p := range race.Patches {
			if slices.Contains(p.Files, ".prow.yaml") {
				problems = append(problems, fmt.Sprintf("%s changes .prow.yaml: the race target has no job until a run of it is green (docs/races.md)", p.File))
			}
			timeout = timeout || strings.Contains(read(p.File), "-timeout $(RACE_TEST_TIMEOUT)")
		}
		if !timeout {
			problems = append(problems, race.Dir+": the race target gives go test no -timeout (its default, 10 minutes a package, is too short under -race)")
		}
	}
	return problems
}

// kcpOrderProblems refuses kcp's pull requests as they were before the
// review (the script's fix inside the pin bump, the race target's Prow job
// and no -timeout, the detector's job without the second pin bump) and
// lets them pass in the order the review asked for.
func TestKCPOrderChecks(t *testing.T) {
	pr := func(name string, files ...[]string) KCPPRResult {
		r := KCPPRResult{Name: name, Dir: "kcp-dev-kcp/" + name, PR: name + "/PR.md"}
		for i, f := range files {
			r.Patches = append(r.Patches, KCPPatchResult{File: fmt.Sprintf("%s/%04d.patch", name, i+1), Subject: name + " subject", Files: f})
		}
		return r
	}
	texts := map[string]string{}
	read := func(rel string) string { return texts[rel] }
	old := &Result{KCPPRs: []KCPPRResult{
		pr("1-pin-bump", []string{KCPBumpScript}, []string{"test/e2e/conformance/x_test.go"}),
		pr("4-race-e2e-target", []string{".prow.yaml", "Makefile"}),
		pr("7-watch-cache-mutation-detector", []string{".prow.yaml"}),
	}}
	texts["4-race-e2e-target/0001.patch"] = "+\tGORACE='log_path=$(RACE_LOG_DIR)/race' $(MAKE) test-e2e-shared-minimal\n"
	texts["7-watch-cache-mutation-detector/PR.md"] = "It needs the pin bump that brings the detector. 2.3 GiB in a job that requests 6 GiB.\n"
	complains(t, "before the review", kcpOrderProblems(t, old, read),
		"kcp-dev-kcp/1-pin-bump changes hack/bump-k8s.sh: the script's fix is a pull request of its own",
		"4-race-e2e-target/0001.patch changes .prow.yaml",
		"kcp-dev-kcp/4-race-e2e-target: the race target gives go test no -timeout",
		"kcp-dev-kcp/7-watch-cache-mutation-detector: want it right after the second pin bump",
		"7-watch-cache-mutation-detector/PR.md: does not name the pin bump it needs",
		"does not give the whole suite's kcp peak RSS with both switches against off",
	)

	now := &Result{KCPPRs: []KCPPRResult{
		pr("0-bump-k8s-script", []string{"docs/content/contributing/guides/rebasing-kubernetes/index.md", KCPBumpScript}),
		pr("1-pin-bump", []string{"test/e2e/conformance/x_test.go"}),
		pr("4-race-e2e-target", []string{"Makefile"}, []string{"test/e2e/conformance/x_test.go"}),
		pr("7-detector-pin-bump"),
		pr("8-watch-cache-mutation-detector", []string{".prow.yaml"}),
	}}
	texts["1-pin-bump/PR.md"] = "The pull request `0-bump-k8s-script subject` comes first too: only with it does kcp's script move every fork replace.\n"
	texts["4-race-e2e-target/0001.patch"] = "+\t$(MAKE) test-e2e-shared-minimal GO_TEST=\"$(GO_TEST) -timeout $(RACE_TEST_TIMEOUT)\"\n"
	texts["7-detector-pin-bump/PR.md"] = "```sh\nBRANCH=v0.0.0-<date>-<commit> ./hack/bump-k8s.sh   # the fork commit\n```\n"
	texts["8-watch-cache-mutation-detector/PR.md"] = "It merges after the second pin bump. The whole suite as this job runs it: kcp's peak RSS 2.62 GiB with both switches against 1.60 GiB off.\n"
	complains(t, "as the review asked", kcpOrderProblems(t, now, read))
	now.ForkVersionIncludes = []string{"detector"}
	complains(t, "the first pin bump holds the detector", kcpOrderProblems(t, now, read),
		"7-detector-pin-bump/PR.md: the first pin bump holds the detector: true, and the text bumps with kcp's script: true",
		"8-watch-cache-mutation-detector/PR.md: does not name the pin bump it needs (\"It merges after the pin bump for #4551\")")
}
