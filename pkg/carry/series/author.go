package series

import (
	"bytes"
	"errors"
	"strings"
)

// SetAuthor returns a git format-patch file with from (a From: header value,
// "Name <email>") as its only author and, when signedOffBy is not empty,
// "Signed-off-by: signedOffBy" as the last trailer of its message (not
// twice). The carry's patches name no person: whoever submits or applies
// them sets the author here.
func SetAuthor(data []byte, from, signedOffBy string) ([]byte, error) {
	if from == "" {
		return nil, errors.New("no author given")
	}
	return setAuthor(data, from, signedOffBy)
}

// RemoveAuthor returns a git format-patch file without its From: header:
// the form the carry keeps its patches in.
func RemoveAuthor(data []byte) ([]byte, error) { return setAuthor(data, "", "") }

func setAuthor(data []byte, from, signedOffBy string) ([]byte, error) {
	head, rest, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return nil, errors.New("no blank line after the mail headers")
	}
	var headers []string
	lines := strings.Split(string(head), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "From:") {
			headers = append(headers, lines[i])
			continue
		}
		for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
			i++ // a folded From: header
		}
	}
	at := 0
	if len(headers) > 0 && strings.HasPrefix(headers[0], "From ") {
		at = 1 // after the mbox separator
	}
	if from != "" {
		headers = append(headers[:at], append([]string{"From: " + from}, headers[at:]...)...)
	}
	body := string(rest)
	if signedOffBy != "" {
		msg, diff, ok := strings.Cut(body, "\n---\n")
		if !ok {
			return nil, errors.New("no --- line between the message and the diff")
		}
		msg = strings.TrimRight(msg, "\n")
		trailer := "Signed-off-by: " + signedOffBy
		paras := strings.Split(msg, "\n\n")
		switch last := paras[len(paras)-1]; {
		case strings.HasSuffix("\n"+last, "\n"+trailer):
		case isTrailerBlock(last):
			msg += "\n" + trailer
		default:
			msg += "\n\n" + trailer
		}
		body = msg + "\n---\n" + diff
	}
	return []byte(strings.Join(headers, "\n") + "\n\n" + body), nil
}

// isTrailerBlock says whether every line of a message paragraph is a git
// trailer ("Token: value").
func isTrailerBlock(para string) bool {
	for _, line := range strings.Split(para, "\n") {
		token, value, ok := strings.Cut(line, ": ")
		if !ok || token == "" || strings.ContainsAny(token, " \t") || strings.TrimSpace(value) == "" {
			return false
		}
	}
	return true
}
