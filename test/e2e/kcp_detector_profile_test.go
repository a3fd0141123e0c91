package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kcp-carry/kcp-carry/internal/testfs"
	"github.com/kcp-carry/kcp-carry/pkg/harness/profiles"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// The parts of kcp the detector profile tells apart. A sample goes to the
// first part on its stack: the GC a detector's allocation assists is the
// detector's, the background GC is the GC's.
var (
	detectorCPUParts = []profiles.Part{
		{Name: "detector: compare", Functions: []string{
			"cache.(*defaultCacheMutationDetector).CompareObjects",
			"cache.(*defaultCacheMutationDetector).compareObjects",
		}},
		{Name: "detector: copy", Functions: []string{"cache.(*defaultCacheMutationDetector).AddObject"}},
		{Name: "GC", Functions: []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge"}},
	}
	detectorHeapParts = []profiles.Part{
		{Name: "detector: copies", Functions: []string{"cache.(*defaultCacheMutationDetector).AddObject"}},
	}
)

// profileRun is one profiled run of kcp's tests.
type profileRun struct {
	Name       string           `json:"name"`
	Run        *detectorRun     `json:"run"`
	CPU        []profiles.Share `json:"cpu"`
	CPUTotal   time.Duration    `json:"cpuTotal"`
	CPUWindows int              `json:"cpuWindows"`
	Heap       []profiles.Share `json:"heap"`
	HeapTotal  int64            `json:"heapInuseBytes"`
	HeapAt     time.Duration    `json:"heapAt"`
}

// TestRealKCPDetectorProfile (make profile-detector): where kcp's CPU and
// memory go under kcp's e2e subset (detectorPackages), with the detectors
// off, with the informers' switch alone on client-go's detector as
// released (the carry without the detector's pull request), with the
// informers' switch alone and with both switches on the carry's detector.
// kcp is profiled through its /debug/pprof endpoints: CPU profiles back to
// back, merged, and the heap profile with the most bytes in use. The
// profiles (pprof's format, for `go tool pprof`) and profile.json go to
// .build/detector-profile/<tree>/.
func TestRealKCPDetectorProfile(t *testing.T) {
	src := os.Getenv(EnvKCPMainSource)
	if src == "" {
		src = os.Getenv(EnvKCPSource)
	}
	if testing.Short() || src == "" {
		t.Skipf("live kcp: set %s or %s to a kcp tree, without -short", EnvKCPMainSource, EnvKCPSource)
	}
	root := testfs.RepoRoot(t)
	work := filepath.Join(root, ".build", "detector-profile", filepath.Base(filepath.Clean(src)))
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	_, detectorPR := detectorSpecs(t, root)
	carry := buildKCPWithout(t, root, src, filepath.Join(work, "bin", "carry"), carryDetector, nil)
	released := buildKCPWithout(t, root, src, filepath.Join(work, "bin", "released"), "carry without the detector's pull request", detectorPR)
	tree, tests, pkgs := compileDetectorTests(t, src, work)

	var runs []*profileRun
	for _, v := range []struct {
		name, bin string
		sw        detectorSwitch
	}{
		{"off", carry, detectorsOff},
		{"informers, client-go's detector as released", released, informersOnly},
		{"informers", carry, informersOnly},
		{"both switches", carry, detectorsOn},
	} {
		dir := filepath.Join(work, strings.NewReplacer(" ", "-", ",", "", "'", "").Replace(v.name))
		// kcp's --profiler-address: net/http/pprof on a listener of its
		// own (its secure port does not serve /debug/pprof/profile).
		ports, err := server.FreePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		profiler := fmt.Sprintf("127.0.0.1:%d", ports[0])
		var col *profiles.Collection
		var colErr error
		r := runDetectorSuiteWatched(t, v.bin, tree, tests, pkgs, filepath.Join(dir, "logs"), v.sw, []string{"--profiler-address=" + profiler}, func(ctx context.Context) {
			col, colErr = profiles.Collect(ctx, profiles.Options{Get: httpGetter("http://" + profiler), CPUWindow: 10 * time.Second, HeapEvery: 15 * time.Second, Logf: t.Logf})
		})
		t.Logf("%s: %s", v.name, r.summary())
		expectDetectorClean(t, r)
		if colErr != nil {
			t.Fatalf("%s: %v", v.name, colErr)
		}
		if col.CPU == nil || col.PeakHeap == nil {
			t.Fatalf("%s: no CPU or heap profile was taken (%d CPU windows, %d heaps)", v.name, col.CPUWindows, col.Heaps)
		}
		pr := &profileRun{Name: v.name, Run: r, CPUWindows: col.CPUWindows, HeapAt: col.PeakHeapAt}
		var cpuNanos int64
		if pr.CPU, cpuNanos, err = profiles.Shares(col.CPU, "cpu", detectorCPUParts); err != nil {
			t.Fatal(err)
		}
		pr.CPUTotal = time.Duration(cpuNanos)
		if pr.Heap, pr.HeapTotal, err = profiles.Shares(col.PeakHeap, "inuse_space", detectorHeapParts); err != nil {
			t.Fatal(err)
		}
		writeProfile(t, filepath.Join(dir, "cpu.pb.gz"), col.CPU)
		writeProfile(t, filepath.Join(dir, "heap-peak.pb.gz"), col.PeakHeap)
		// The parts must be where the switches say: none of the detector
		// with both off, some with one on.
		detector := pr.CPU[0].Value + pr.CPU[1].Value
		if (v.sw == detectorsOff) != (detector == 0) {
			t.Errorf("%s: the detector's CPU is %s with the switches %s", v.name, time.Duration(detector), v.sw)
		}
		runs = append(runs, pr)
	}
	data, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "profile.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("profiles in %s:\n%s", work, profileTable(runs))
}

// httpGetter reads paths of base with a plain GET, as `go tool pprof` does.
func httpGetter(base string) func(ctx context.Context, path string) ([]byte, error) {
	return func(ctx context.Context, path string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, bytes.TrimSpace(body))
		}
		return body, nil
	}
}

func writeProfile(t *testing.T, path string, p *profile.Profile) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// profileTable is the markdown table of the profiled runs: kcp's CPU as
// profiled and its parts, the peak heap in use and the detector's copies.
func profileTable(runs []*profileRun) string {
	var b strings.Builder
	b.WriteString("| run | wall | CPU profiled |")
	for _, p := range runs[0].CPU {
		fmt.Fprintf(&b, " %s |", p.Part)
	}
	b.WriteString(" peak heap in use |")
	for _, p := range runs[0].Heap {
		fmt.Fprintf(&b, " %s |", p.Part)
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(runs[0].CPU)+1+len(runs[0].Heap)) + "\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s | %s |", r.Name, r.Run.Wall.Round(time.Second), r.CPUTotal.Round(time.Second))
		for _, p := range r.CPU {
			fmt.Fprintf(&b, " %s (%.0f%%) |", time.Duration(p.Value).Round(time.Second), 100*p.Fraction)
		}
		fmt.Fprintf(&b, " %.0f MiB at %s |", float64(r.HeapTotal)/(1<<20), r.HeapAt.Round(time.Second))
		for _, p := range r.Heap {
			fmt.Fprintf(&b, " %.0f MiB (%.0f%%) |", float64(p.Value)/(1<<20), 100*p.Fraction)
		}
		b.WriteString("\n")
	}
	return b.String()
}
