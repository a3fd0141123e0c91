package report

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// RealKCP is the same comparison on kcp v0.32.3 itself: a stock build
// (bin/kcp-pristine, the fork at its pin) and one with the carry (bin/kcp),
// built from the same kcp tree with the same ldflags.
type RealKCP struct {
	// Binaries are the two kcp binaries (Build says how they were made).
	Binaries []Shard `json:"binaries"`
	// Clusters are the logical clusters the hammer seeded: root and the
	// workspaces created through kcp's Workspace API.
	Clusters []string `json:"clusters"`
	// Duel is the duel load against each kcp, fresh, one at a time.
	Duel Duel `json:"duel"`
	// Ratios are one client's LIST throughput, patched over stock, one
	// per annotation count measured.
	Ratios []KCPRatio `json:"ratios"`
}

// KCPRatio is one client (one request at a time, which the stock kcp
// survives) against both kcps, in rounds that alternate which goes first:
// wildcard partial-metadata LISTs, the carry's path, and full-object LISTs
// of the same objects, which the carry does not touch (the noise control:
// its ratio should be 1 within the noise).
type KCPRatio struct {
	// Objects ClusterRoles in all, spread over Workspaces logical clusters
	// (root and Workspaces-1 workspaces), each with Annotations extra
	// annotations.
	Objects     int `json:"objects"`
	Workspaces  int `json:"workspaces"`
	Annotations int `json:"annotations"`
	// Lister is the partial LIST's request shape (its name, e.g. "v1:0");
	// the full-object LIST uses the same resourceVersion.
	Lister string `json:"lister"`
	// Bound is each run's duration.
	Bound  time.Duration `json:"boundNanos"`
	Rounds []KCPRound    `json:"rounds"`
	// The JSON also holds "partial" and "full" (Partial, Full), derived
	// from the rounds when it is written.
}

// KCPRound is one round: each kind of LIST against each kcp.
type KCPRound struct {
	// First is the variant measured first in this round.
	First   string   `json:"first"`
	Partial RatePair `json:"partial"`
	Full    RatePair `json:"full"`
}

// RatePair is one kind of LIST against both kcps in one round. Its JSON
// also holds "ratio" (Ratio).
type RatePair struct {
	Pristine Rated `json:"pristine"`
	Patched  Rated `json:"patched"`
}

// Ratio is Patched's LIST/s over Pristine's (0 when Pristine has none).
func (p RatePair) Ratio() float64 {
	if p.Pristine.ListsPerSecond() <= 0 {
		return 0
	}
	return p.Patched.ListsPerSecond() / p.Pristine.ListsPerSecond()
}

// Rated is LISTs over a span. Its JSON also holds "listsPerSecond".
type Rated struct {
	Lists   int64         `json:"lists"`
	Failed  int64         `json:"failed"`
	Elapsed time.Duration `json:"elapsedNanos"`
}

// ListsPerSecond is Lists / Elapsed.
func (r Rated) ListsPerSecond() float64 { return Rate(r.Lists, r.Elapsed) }

// RatioSummary is the ratio over all rounds and how much rounds disagree.
type RatioSummary struct {
	Ratio float64 `json:"ratio"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	// StdDev is the standard deviation of the per-round ratios.
	StdDev float64 `json:"stdDev"`
}

// Partial is the partial-metadata LISTs' ratio over the rounds.
func (k *KCPRatio) Partial() RatioSummary {
	return summarize(k.Rounds, func(r KCPRound) RatePair { return r.Partial })
}

// Full is the full-object LISTs' ratio over the rounds.
func (k *KCPRatio) Full() RatioSummary {
	return summarize(k.Rounds, func(r KCPRound) RatePair { return r.Full })
}

func summarize(rounds []KCPRound, pick func(KCPRound) RatePair) RatioSummary {
	var s RatioSummary
	var pristine, patched Total
	var ratios []float64
	for _, r := range rounds {
		p := pick(r)
		pristine.Add(Run{Lists: p.Pristine.Lists, Alive: p.Pristine.Elapsed})
		patched.Add(Run{Lists: p.Patched.Lists, Alive: p.Patched.Elapsed})
		ratios = append(ratios, p.Ratio())
	}
	s.Ratio = Ratio(patched, pristine)
	if len(ratios) == 0 {
		return s
	}
	s.Min, s.Max = ratios[0], ratios[0]
	mean := 0.0
	for _, x := range ratios {
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
		mean += x
	}
	mean /= float64(len(ratios))
	v := 0.0
	for _, x := range ratios {
		v += (x - mean) * (x - mean)
	}
	s.StdDev = math.Sqrt(v / float64(len(ratios)))
	return s
}

// validate reports the first inconsistency of the real-kcp ratios read
// from disk: a negative count or span.
func (k *RealKCP) validate() error {
	for i, r := range k.Ratios {
		for j, rd := range r.Rounds {
			for _, x := range []Rated{rd.Partial.Pristine, rd.Partial.Patched, rd.Full.Pristine, rd.Full.Patched} {
				if x.Lists < 0 || x.Failed < 0 || x.Elapsed < 0 {
					return fmt.Errorf("realKCP.ratios[%d].rounds[%d]: inconsistent rate %+v", i, j, x)
				}
			}
		}
	}
	return nil
}

// KCP names in tables.
const (
	stockKCPName   = "stock kcp"
	patchedKCPName = "kcp with the carry"
)

// Markdown is the real-kcp section: the duel table and the single-client
// ratios with their rounds.
func (k *RealKCP) Markdown() string {
	var b strings.Builder
	d := k.Duel
	fmt.Fprintf(&b, "**Duel on kcp v0.32.3**: %s, over %s, against each kcp in turn (fresh root directory each).\n\n",
		d.Load.Describe(), strings.Join(codes(k.Clusters), ", "))
	d.writeTable(&b, "kcp", stockKCPName, patchedKCPName)
	for _, r := range k.Ratios {
		if len(r.Rounds) > 0 {
			b.WriteString("\n" + r.Markdown())
		}
	}
	return b.String()
}

// Markdown is one single-client ratio: the summary and its rounds.
func (r *KCPRatio) Markdown() string {
	var b strings.Builder
	partial, full := r.Partial(), r.Full()
	fmt.Fprintf(&b, "**One client on kcp v0.32.3**: %s ClusterRoles over %d logical clusters, %d extra annotations each; one request at a time, `%s`, %s per run, %d rounds alternating which kcp goes first. "+
		"Wildcard partial-metadata LISTs with the carry: **%.3f×** stock (per round %.3f to %.3f, standard deviation %.3f). "+
		"Full-object LISTs of the same objects, which the carry does not touch (the noise control): **%.3f×** (per round %.3f to %.3f, standard deviation %.3f). "+
		"Both rates include the same client work: the client reads each answer whole and discards it.\n\n",
		Thousands(int64(r.Objects)), r.Workspaces, r.Annotations, r.Lister, Seconds(r.Bound), len(r.Rounds),
		partial.Ratio, partial.Min, partial.Max, partial.StdDev,
		full.Ratio, full.Min, full.Max, full.StdDev)
	b.WriteString("| round | first | partial LIST/s stock | with the carry | ratio | full LIST/s stock | with the carry | ratio |\n")
	b.WriteString("|--:|---|--:|--:|--:|--:|--:|--:|\n")
	for i, rd := range r.Rounds {
		fmt.Fprintf(&b, "| %d | %s | %.1f | %.1f | %.3f | %.1f | %.1f | %.3f |\n", i+1, rd.First,
			rd.Partial.Pristine.ListsPerSecond(), rd.Partial.Patched.ListsPerSecond(), rd.Partial.Ratio(),
			rd.Full.Pristine.ListsPerSecond(), rd.Full.Patched.ListsPerSecond(), rd.Full.Ratio())
	}
	return b.String()
}
