package measure

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kcp-carry/kcp-carry/pkg/evidence/report"
	"github.com/kcp-carry/kcp-carry/pkg/evidence/report/chart"
)

// Write writes duel.json, lists-per-second.svg and README.md into dir
// (created if missing; other files in it, such as benchstat.txt, stay). It
// renders all three into a temporary directory inside dir first and renames
// them into place only when all three are written, so a failure leaves the
// previous evidence intact.
func Write(dir string, rep *report.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bench, err := os.ReadFile(filepath.Join(dir, report.BenchstatFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	sharded, err := report.ReadSharded(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".evidence-tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	data, err := rep.Marshal()
	if err != nil {
		return err
	}
	var duelChart bytes.Buffer
	if err := chart.WriteDuel(&duelChart, rep); err != nil {
		return fmt.Errorf("the chart: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{report.ChartFile, duelChart.Bytes()},
		{report.DuelFile, data},
		{report.ReadmeFile, report.README(rep, string(bench), sharded)},
	}
	if rep.RealKCP != nil {
		var kcpChart bytes.Buffer
		if err := chart.WriteKCPDuel(&kcpChart, rep.RealKCP); err != nil {
			return fmt.Errorf("the real-kcp chart: %w", err)
		}
		files = append(files, struct {
			name string
			data []byte
		}{report.KCPChartFile, kcpChart.Bytes()})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	for i, f := range files {
		if err := os.Rename(filepath.Join(tmp, f.name), filepath.Join(dir, f.name)); err != nil {
			var done []string
			for _, d := range files[:i] {
				done = append(done, d.name)
			}
			return fmt.Errorf("%w (already replaced: %s)", err, strings.Join(done, ", "))
		}
	}
	return nil
}
