package export

import (
	"fmt"
	"regexp"
	"strings"
)

// maxForkMessageLines is how long the body of a fork commit's message may
// be: fork carries are short, and the pull request's text says the rest.
const maxForkMessageLines = 15

// forkMessageProblems is what a fork commit's message body must not be:
// longer than maxForkMessageLines lines, a git command to find a commit
// (name it), or a sentence the pull request's text prText says already.
func forkMessageProblems(body, prText string) []string {
	var problems []string
	body = strings.TrimSpace(body)
	if n := strings.Count(body, "\n") + 1; n > maxForkMessageLines {
		problems = append(problems, fmt.Sprintf("a message of %d lines, want at most %d: fork carries are short, the pull request says the rest", n, maxForkMessageLines))
	}
	if regexp.MustCompile(`(?m)\bgit (log|show|grep|rev-list)\b`).MatchString(body) {
		problems = append(problems, "gives a git command to find a commit: name it")
	}
	normalize := func(s string) string {
		return strings.ToLower(strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), " "))
	}
	pr := normalize(prText)
	for _, sentence := range regexp.MustCompile(`[.:;]\s`).Split(normalize(body), -1) {
		if len(strings.Fields(sentence)) >= 8 && strings.Contains(pr, strings.TrimSuffix(sentence, ".")) {
			problems = append(problems, fmt.Sprintf("repeats the pull request's text: %q", sentence))
		}
	}
	return problems
}
