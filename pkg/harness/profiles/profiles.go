// Package profiles takes a Go server's CPU and heap profiles over a run
// (its /debug/pprof endpoints) and says where the CPU and the memory went:
// the share of each named part of the program, read off the stacks.
package profiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Options says how to take the profiles.
type Options struct {
	// Get reads a path of the server (/debug/pprof/profile?seconds=10).
	Get func(ctx context.Context, path string) ([]byte, error)
	// CPUWindow is the length of each CPU profile; the run's CPU profile
	// is their merge. The window cut short by the end of the run is lost.
	CPUWindow time.Duration
	// HeapEvery is how often the heap is profiled; the profile with the
	// most bytes in use is kept.
	HeapEvery time.Duration
	// Logf, when set, hears of each profile that failed.
	Logf func(format string, args ...any)
}

// Collection is what Collect took.
type Collection struct {
	// CPU merges the CPU profiles, nil when none finished.
	CPU *profile.Profile
	// CPUWindows is how many CPU profiles were merged.
	CPUWindows int
	// PeakHeap is the heap profile with the most bytes in use, and
	// PeakHeapAt when it was taken, from the start of Collect.
	PeakHeap   *profile.Profile
	PeakHeapAt time.Duration
	// Heaps is how many heap profiles were taken.
	Heaps int
}

// Collect profiles the server until ctx is done: CPU profiles back to back
// in one goroutine, heap profiles in another.
func Collect(ctx context.Context, o Options) (*Collection, error) {
	if o.Get == nil || o.CPUWindow < time.Second || o.HeapEvery <= 0 {
		return nil, errors.New("profiles: Get, a CPUWindow of at least 1s and HeapEvery are needed")
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	began := time.Now()
	c := &Collection{}
	cpuDone := make(chan []*profile.Profile)
	go func() {
		var cpu []*profile.Profile
		path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(o.CPUWindow/time.Second))
		for ctx.Err() == nil {
			p, err := get(ctx, o.Get, path)
			if err != nil {
				if ctx.Err() == nil {
					logf("profiles: CPU: %v", err)
					// Not at once again: a server that refuses would
					// be asked in a tight loop.
					select {
					case <-time.After(time.Second):
					case <-ctx.Done():
					}
				}
				continue
			}
			cpu = append(cpu, p)
		}
		cpuDone <- cpu
	}()

	var peak int64 = -1
	tick := time.NewTicker(o.HeapEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			continue
		case <-tick.C:
		}
		p, err := get(ctx, o.Get, "/debug/pprof/heap")
		if err != nil {
			if ctx.Err() == nil {
				logf("profiles: heap: %v", err)
			}
			continue
		}
		c.Heaps++
		_, total, err := Shares(p, "inuse_space", nil)
		if err != nil {
			return nil, err
		}
		if total > peak {
			peak, c.PeakHeap, c.PeakHeapAt = total, p, time.Since(began)
		}
	}
	cpu := <-cpuDone
	c.CPUWindows = len(cpu)
	if len(cpu) > 0 {
		merged, err := profile.Merge(cpu)
		if err != nil {
			return nil, fmt.Errorf("profiles: merging %d CPU profiles: %w", len(cpu), err)
		}
		c.CPU = merged
	}
	return c, nil
}

func get(ctx context.Context, read func(context.Context, string) ([]byte, error), path string) (*profile.Profile, error) {
	data, err := read(ctx, path)
	if err != nil {
		return nil, err
	}
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return p, nil
}

// Part names a part of the program by the functions that enter it: a
// sample belongs to the first part that has one of its Functions on the
// sample's stack. A function is matched by its full name's suffix
// ("(*defaultCacheMutationDetector).AddObject"), so vendored and
// module paths alike match.
type Part struct {
	Name      string
	Functions []string
}

// Share is a part's value in a profile: Value in the sample type's unit,
// Fraction of the profile's total.
type Share struct {
	Part     string  `json:"part"`
	Value    int64   `json:"value"`
	Fraction float64 `json:"fraction"`
}

// Other is the share of the samples no part claims.
const Other = "other"

// Shares sums the sample type's values (cpu, inuse_space, alloc_space)
// per part, in the parts' order, then Other.
func Shares(p *profile.Profile, sampleType string, parts []Part) ([]Share, int64, error) {
	i, err := sampleIndex(p, sampleType)
	if err != nil {
		return nil, 0, err
	}
	values := make([]int64, len(parts)+1)
	var total int64
	for _, s := range p.Sample {
		v := s.Value[i]
		total += v
		values[partOf(s, parts)] += v
	}
	out := make([]Share, 0, len(values))
	for k, v := range values {
		name := Other
		if k < len(parts) {
			name = parts[k].Name
		}
		sh := Share{Part: name, Value: v}
		if total > 0 {
			sh.Fraction = float64(v) / float64(total)
		}
		out = append(out, sh)
	}
	return out, total, nil
}

// partOf is the index of the first part on s's stack, len(parts) if none.
func partOf(s *profile.Sample, parts []Part) int {
	for k, part := range parts {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				for _, f := range part.Functions {
					if strings.HasSuffix(line.Function.Name, f) {
						return k
					}
				}
			}
		}
	}
	return len(parts)
}

func sampleIndex(p *profile.Profile, name string) (int, error) {
	for i, st := range p.SampleType {
		if st.Type == name {
			return i, nil
		}
	}
	var have []string
	for _, st := range p.SampleType {
		have = append(have, st.Type)
	}
	return 0, fmt.Errorf("profiles: the profile has no %s samples (it has %s)", name, strings.Join(have, ", "))
}
