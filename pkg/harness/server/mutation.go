package server

import (
	"os"
	"regexp"
	"strconv"
	"strings"
)

// CacheMutation is one report of client-go's cache mutation detector
// (KUBE_CACHE_MUTATION_DETECTOR=true): an object a cache handed out was
// changed. The fork's watch cache names its detector after the cache's
// reflector ("storage/cacher.go:/clusterroles"), client-go's informers after
// theirs.
type CacheMutation struct {
	// Cache is the detector's name.
	Cache string `json:"cache"`
	// Index is the object's place in the detector's list.
	Index int `json:"index"`
	// Object is the first name the object's dump shows ("" if none).
	Object string `json:"object,omitempty"`
	// Now are the lines of the object's dump that its copy taken when it
	// was stored lacks, Stored the copy's lines the object lacks now
	// (trimmed, at most maxChangedLines each): what the writer changed.
	Now    []string `json:"now,omitempty"`
	Stored []string `json:"stored,omitempty"`
}

// The environment of a server with client-go's cache mutation detector on
// (strconv.ParseBool reads the value), and off: kcp's informers honour
// KUBE_CACHE_MUTATION_DETECTOR, and the fork's watch cache, with the carry's
// detector patch, KUBE_WATCHCACHE_MUTATION_DETECTOR.
const (
	CacheMutationDetectorOn  = cacheMutationDetectorVar + "=true"
	CacheMutationDetectorOff = cacheMutationDetectorVar + "=false"

	WatchCacheMutationDetectorOn  = watchCacheMutationDetectorVar + "=true"
	WatchCacheMutationDetectorOff = watchCacheMutationDetectorVar + "=false"

	cacheMutationDetectorVar      = "KUBE_CACHE_MUTATION_DETECTOR"
	watchCacheMutationDetectorVar = "KUBE_WATCHCACHE_MUTATION_DETECTOR"
	// detectorMadeLine is the warning client-go's NewCacheMutationDetector
	// logs for each detector it makes with the switch on.
	detectorMadeLine = "Mutation detector is enabled"
)

// CacheMutationDetectorEnv is the environment that turns the informers'
// detectors and the watch cache's on or off.
func CacheMutationDetectorEnv(informers, watchCache bool) []string {
	env := []string{CacheMutationDetectorOff, WatchCacheMutationDetectorOff}
	if informers {
		env[0] = CacheMutationDetectorOn
	}
	if watchCache {
		env[1] = WatchCacheMutationDetectorOn
	}
	return env
}

// CacheMutationDetectorOn says whether the child was started with the cache
// mutation detector's switch on, read as client-go reads it
// (strconv.ParseBool; of two entries, exec keeps the last).
func (s *Server) CacheMutationDetectorOn() bool {
	env := s.opts.Env
	if env == nil {
		env = os.Environ()
	}
	on := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, cacheMutationDetectorVar+"="); ok {
			on, _ = strconv.ParseBool(v)
		}
	}
	return on
}

// CacheMutationDetectorsMade counts the detectors a process's output says
// client-go made (one per informer; with the carry's patch, one per watch
// cache too): none with the switch on means the process did not honour it.
func CacheMutationDetectorsMade(output string) int {
	return strings.Count(output, detectorMadeLine)
}

// CacheMutations is what a process's output says of its caches.
type CacheMutations struct {
	Reports []CacheMutation `json:"reports,omitempty"`
	// Panic is the detector's failure, "cache <name> modified", which ends
	// the process ("" if none).
	Panic string `json:"panic,omitempty"`
}

var (
	alteredRE  = regexp.MustCompile(`^CACHE (.+)\[(\d+)\] ALTERED!$`)
	modifiedRE = regexp.MustCompile(`^panic: (cache .+ modified)`)
	dumpNameRE = regexp.MustCompile(`\bName: \(string\) \(len=\d+\) "([^"]*)"`)
	logLineRE  = regexp.MustCompile(`^[IWEF]\d{4} `)
	// klog's header, wherever it starts in a line.
	klogHeaderRE = regexp.MustCompile(`[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [^ :\]]+:\d+\] `)
	sideSpaceRE  = regexp.MustCompile(` {2,}`)
)

// ParseCacheMutations reads the detector's reports from a process's output
// (kcp's stdout, where client-go prints them, merged with its stderr):
//
//	CACHE storage/cacher.go:/clusterroles[3] ALTERED!
//	<the object now>     <the object when stored>   (one line of each per row)
//	...
//	panic: cache storage/cacher.go:/clusterroles modified
func ParseCacheMutations(output string) CacheMutations {
	var res CacheMutations
	lines := strings.Split(output, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		if m := modifiedRE.FindStringSubmatch(l); m != nil && res.Panic == "" {
			res.Panic = m[1]
			continue
		}
		m := alteredRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		idx, _ := strconv.Atoi(m[2])
		r := CacheMutation{Cache: m[1], Index: idx}
		var rows []string
		for i+1 < len(lines) {
			next := strings.TrimRight(lines[i+1], "\r")
			if next == "" || alteredRE.MatchString(next) || modifiedRE.MatchString(next) {
				break
			}
			i++
			if logLineRE.MatchString(next) {
				continue
			}
			// The detector prints a dump in one write, which can reach
			// the output in pieces with kcp's log lines between them:
			// a row that a log line interrupts goes on after it.
			for {
				at := klogHeaderRE.FindStringIndex(next)
				if at == nil {
					break
				}
				next = next[:at[0]]
				for i+1 < len(lines) && logLineRE.MatchString(lines[i+1]) {
					i++
				}
				if i+1 < len(lines) {
					next += strings.TrimRight(lines[i+1], "\r")
					i++
				}
			}
			rows = append(rows, next)
		}
		r.Object, r.Now, r.Stored = readSideBySide(rows)
		res.Reports = append(res.Reports, r)
	}
	return res
}

// maxChangedLines bounds CacheMutation.Now and Stored.
const maxChangedLines = 8

// readSideBySide reads apimachinery's ObjectGoPrintSideBySide: each row is a
// line of the left dump padded to one column, then a line of the right one.
// The first row is the object's type on both sides, which gives the column.
func readSideBySide(rows []string) (name string, now, stored []string) {
	if len(rows) == 0 {
		return "", nil, nil
	}
	first := strings.TrimRight(rows[0], " ")
	loc := sideSpaceRE.FindAllStringIndex(first, -1)
	if len(loc) == 0 {
		return "", nil, nil
	}
	col := loc[len(loc)-1][1]
	var left, right []string
	for _, row := range rows {
		l, r := row, ""
		if len(row) > col {
			l, r = row[:col], row[col:]
		}
		left, right = append(left, strings.TrimSpace(l)), append(right, strings.TrimSpace(r))
	}
	for _, l := range left {
		if m := dumpNameRE.FindStringSubmatch(l); m != nil {
			name = m[1]
			break
		}
	}
	return name, onlyIn(left, right), onlyIn(right, left)
}

// onlyIn are the lines of a that b does not have (as a multiset), in order,
// at most maxChangedLines.
func onlyIn(a, b []string) []string {
	count := map[string]int{}
	for _, l := range b {
		count[l]++
	}
	var out []string
	for _, l := range a {
		if count[l] > 0 {
			count[l]--
			continue
		}
		if l != "" && len(out) < maxChangedLines {
			out = append(out, l)
		}
	}
	return out
}
