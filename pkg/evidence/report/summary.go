package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kcp-carry/kcp-carry/pkg/util/markdown"
)

// Shard names in tables.
const (
	pristineName = "pristine fork"
	patchedName  = "with the carry"
)

// Tables is the duel table, the single-lister ratio, the scaling table and
// the notes, as markdown. The evidence README shows them under its own
// account of the setup.
func (r *Report) Tables() string {
	var b strings.Builder
	r.writeDuel(&b)
	r.writeSingleLister(&b)
	r.writeScaling(&b)
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	return b.String()
}

func (r *Report) writeDuel(b *strings.Builder) {
	d := r.Duel
	fmt.Fprintf(b, "\n**Duel**: %s, against each shard in turn.\n\n", d.Load.Describe())
	d.writeTable(b, "shard", pristineName, patchedName)
}

// writeTable writes the duel's table: a row for the pristine run, named
// pristine, and one for the patched run, in a column headed what.
func (d *Duel) writeTable(b *strings.Builder, what, pristine, patched string) {
	fmt.Fprintf(b, "| %s | requests | LIST/s | time to death | fatal error |\n", what)
	b.WriteString("|---|--:|--:|---|---|\n")
	for _, x := range []struct {
		name string
		run  Run
	}{{pristine, d.Pristine}, {patched, d.Patched}} {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", x.name, Thousands(x.run.Requests),
			Thousands(int64(x.run.ListsPerSecond()+0.5)), x.run.deathCell(), x.run.Fatal.Markdown())
	}
}

// deathCell is "2.3 s" or "survived 20.0 s".
func (r Run) deathCell() string {
	if r.Died {
		if r.DeathPhase != "" && r.DeathPhase != "load" {
			return fmt.Sprintf("%s (in the %s phase)", Seconds(r.TimeToDeath), r.DeathPhase)
		}
		return Seconds(r.TimeToDeath)
	}
	return "survived " + Seconds(r.LoadElapsed)
}

func (r *Report) writeSingleLister(b *strings.Builder) {
	s := r.SingleLister
	if len(s.Rounds) == 0 {
		return
	}
	pristine, patched := s.Totals()
	fmt.Fprintf(b, "\n**Single lister**: %s; %d alternating %s per shard. With the carry a lister gets **%.3f×** the pristine fork's LIST/s (%s/s against %s/s).",
		s.Load.Describe(), len(s.Rounds), plural(len(s.Rounds), "round", "rounds"), s.Ratio(),
		Thousands(int64(patched.ListsPerSecond()+0.5)), Thousands(int64(pristine.ListsPerSecond()+0.5)))
	if len(s.Rounds) > 1 {
		var rs []string
		for _, rd := range s.Rounds {
			var pr, pa Total
			pr.Add(rd.Pristine)
			pa.Add(rd.Patched)
			rs = append(rs, fmt.Sprintf("%.3f", Ratio(pa, pr)))
		}
		fmt.Fprintf(b, " Per round: %s.", strings.Join(rs, ", "))
	}
	if pristine.Deaths > 0 || patched.Deaths > 0 {
		fmt.Fprintf(b, " Deaths: pristine %d, patched %d.", pristine.Deaths, patched.Deaths)
	}
	b.WriteString("\n")
}

func (r *Report) writeScaling(b *strings.Builder) {
	s := r.Scaling
	if len(s.Steps) == 0 {
		return
	}
	fmt.Fprintf(b, "\n**Scaling**: listers only, each %s; %s per step, against each shard in turn.\n\n",
		strings.Join(codes(distinct(s.Load.Listers)), " "), s.Load.bounds())
	b.WriteString("| listers |")
	sep := "|---|"
	for _, st := range s.Steps {
		fmt.Fprintf(b, " %d |", st.Listers)
		sep += "--:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, x := range []struct {
		name string
		run  func(Step) Run
	}{{patchedName, func(s Step) Run { return s.Patched }}, {pristineName, func(s Step) Run { return s.Pristine }}} {
		fmt.Fprintf(b, "| %s, LIST/s |", x.name)
		for _, st := range s.Steps {
			fmt.Fprintf(b, " %s |", x.run(st).scalingCell())
		}
		b.WriteString("\n")
	}
}

// scalingCell is "1,234" or "died at 0.4 s (312 until then)".
func (r Run) scalingCell() string {
	rate := Thousands(int64(r.ListsPerSecond() + 0.5))
	if r.Died {
		return fmt.Sprintf("**died** at %s (%s/s until then)", Seconds(r.TimeToDeath), rate)
	}
	return rate
}

// Describe is the load in words, e.g. "8 listers (`kcp:0` …), 2 watchers,
// 4 writers (mixed); at most 20 s or 200,000 requests".
func (l Load) Describe() string {
	var parts []string
	lst := fmt.Sprintf("%d %s", len(l.Listers), plural(len(l.Listers), "lister", "listers"))
	if vs := distinct(l.Listers); len(vs) > 0 {
		lst += " (" + strings.Join(codes(vs), " ") + ")"
	}
	parts = append(parts, lst)
	if l.Watchers > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", l.Watchers, plural(l.Watchers, "watcher", "watchers")))
	}
	if l.Writers > 0 {
		w := fmt.Sprintf("%d %s", l.Writers, plural(l.Writers, "writer", "writers"))
		if l.WriteMode != "" {
			w += " (" + l.WriteMode + ")"
		}
		parts = append(parts, w)
	}
	if l.Watchers == 0 && l.Writers == 0 {
		parts = append(parts, "no watchers or writers")
	}
	return strings.Join(parts, ", ") + "; " + l.bounds()
}

// bounds is "at most 20.0 s or 200,000 requests".
func (l Load) bounds() string {
	return fmt.Sprintf("at most %s or %s requests", Seconds(l.Bound), Thousands(l.Budget))
}

func codes(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = markdown.CodeSpan(s)
	}
	return out
}

// Markdown is "`concurrent map writes` in `handlers.f`", or "none".
func (f *Fatal) Markdown() string {
	if f == nil {
		return "none"
	}
	s := markdown.CodeSpan(f.Signature)
	if f.Where != "" {
		s += " in " + markdown.CodeSpan(ShortFunc(f.Where))
	}
	return s
}

// ShortFunc drops the package path but its last element:
// "k8s.io/apiserver/pkg/endpoints/handlers.f" → "handlers.f".
func ShortFunc(fn string) string {
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		return fn[i+1:]
	}
	return fn
}

// Seconds formats d as seconds with one decimal, e.g. "2.3 s", or as
// milliseconds below a second, e.g. "630 ms".
func Seconds(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// Thousands formats n with commas: 1234567 → "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func distinct(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
