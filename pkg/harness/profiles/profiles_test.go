package profiles

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// stacks builds a profile of one sample type from stacks, leaf first:
// "runtime.mallocgc <- k8s.io/client-go/tools/cache.(*defaultCacheMutationDetector).AddObject".
func stacks(sampleType, unit string, samples map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: sampleType, Unit: unit}}}
	funcs := map[string]*profile.Function{}
	for stack, v := range samples {
		s := &profile.Sample{Value: []int64{v}}
		for _, name := range strings.Split(stack, " <- ") {
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

var detectorParts = []Part{
	{Name: "compare", Functions: []string{"(*defaultCacheMutationDetector).CompareObjects"}},
	{Name: "copy", Functions: []string{"(*defaultCacheMutationDetector).AddObject"}},
	{Name: "gc", Functions: []string{"runtime.gcBgMarkWorker"}},
}

func TestShares(t *testing.T) {
	p := stacks("cpu", "nanoseconds", map[string]int64{
		"reflect.deepValueEqual <- reflect.DeepEqual <- k8s.io/client-go/tools/cache.(*defaultCacheMutationDetector).CompareObjects": 50,
		"runtime.mallocgc <- v1.(*Pod).DeepCopy <- vendor/k8s.io/client-go/tools/cache.(*defaultCacheMutationDetector).AddObject":    20,
		// The first part on the stack wins, whatever the order of frames.
		"runtime.gcAssistAlloc <- runtime.mallocgc <- k8s.io/client-go/tools/cache.(*defaultCacheMutationDetector).AddObject": 5,
		"runtime.gcDrain <- runtime.gcBgMarkWorker": 15,
		"encoding/json.Marshal <- main.serve":       10,
	})
	shares, total, err := Shares(p, "cpu", detectorParts)
	if err != nil {
		t.Fatal(err)
	}
	if total != 100 {
		t.Errorf("total = %d, want 100", total)
	}
	want := map[string]int64{"compare": 50, "copy": 25, "gc": 15, Other: 10}
	if len(shares) != 4 {
		t.Fatalf("shares = %+v", shares)
	}
	for i, name := range []string{"compare", "copy", "gc", Other} {
		if shares[i].Part != name || shares[i].Value != want[name] || shares[i].Fraction != float64(want[name])/100 {
			t.Errorf("share %d = %+v, want %s %d", i, shares[i], name, want[name])
		}
	}
	if _, _, err := Shares(p, "inuse_space", detectorParts); err == nil || !strings.Contains(err.Error(), "no inuse_space samples (it has cpu)") {
		t.Errorf("a sample type the profile lacks: %v", err)
	}
}

func encode(t *testing.T, p *profile.Profile) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCollect(t *testing.T) {
	cpu := encode(t, stacks("cpu", "nanoseconds", map[string]int64{"main.work": 10}))
	var heaps atomic.Int64
	get := func(ctx context.Context, path string) ([]byte, error) {
		switch {
		case strings.HasPrefix(path, "/debug/pprof/profile?seconds=1"):
			// A CPU profile takes its window.
			select {
			case <-time.After(200 * time.Millisecond):
				return cpu, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case path == "/debug/pprof/heap":
			// The heap grows to 30 bytes at the third profile, then shrinks.
			n := heaps.Add(1)
			return encode(t, stacks("inuse_space", "bytes", map[string]int64{"main.keep": 10 * min(n, 6-n)})), nil
		}
		t.Errorf("unexpected GET %s", path)
		return nil, context.Canceled
	}
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	c, err := Collect(ctx, Options{Get: get, CPUWindow: time.Second, HeapEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if c.CPUWindows < 2 || c.CPU == nil {
		t.Fatalf("CPU windows = %d, profile %v", c.CPUWindows, c.CPU)
	}
	if _, total, _ := Shares(c.CPU, "cpu", nil); total != int64(10*c.CPUWindows) {
		t.Errorf("merged CPU total = %d over %d windows, want 10 each", total, c.CPUWindows)
	}
	if c.Heaps < 4 {
		t.Fatalf("heap profiles = %d", c.Heaps)
	}
	if _, peak, _ := Shares(c.PeakHeap, "inuse_space", nil); peak != 30 {
		t.Errorf("peak heap = %d bytes, want 30 (the third profile)", peak)
	}

	if _, err := Collect(ctx, Options{Get: get, CPUWindow: time.Millisecond, HeapEvery: time.Second}); err == nil {
		t.Error("a CPU window under a second was accepted")
	}
}
