package soak

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
)

// HeapProfile is one heap profile taken during a soak.
type HeapProfile struct {
	// Label names the point: "2m", "10m", "end".
	Label string `json:"label"`
	// At is the time since the hammer started.
	At time.Duration `json:"atNanos"`
	// File is the profile's file, relative to the output directory.
	File string `json:"file"`
	// InuseBytes and InuseObjects are the profile's totals.
	InuseBytes   int64 `json:"inuseBytes"`
	InuseObjects int64 `json:"inuseObjects"`
}

// fetchHeap takes kcp's heap profile (/debug/pprof/heap, a shard-level path,
// as the shard admin).
func fetchHeap(ctx context.Context, srv *server.KCP) ([]byte, error) {
	return srv.Get(ctx, "/debug/pprof/heap")
}

// DiffEntry is one function's change between two heap profiles, as
// `go tool pprof -top -diff_base=BASE END` lists it (sample_index
// inuse_space): Flat is what the function itself allocated and still holds,
// Cum with what it called.
type DiffEntry struct {
	Function  string `json:"function"`
	FlatBytes int64  `json:"flatBytes"`
	CumBytes  int64  `json:"cumBytes"`
	// FlatObjects is the change of inuse_objects.
	FlatObjects int64 `json:"flatObjects"`
}

// HeapDiff is the change between two heap profiles of one kcp.
type HeapDiff struct {
	Base string `json:"base"`
	End  string `json:"end"`
	// InuseBytes and InuseObjects are the change of the totals.
	InuseBytes   int64 `json:"inuseBytes"`
	InuseObjects int64 `json:"inuseObjects"`
	// Top are the functions whose flat inuse_space changed most, grown or
	// shrunk, in go tool pprof -top's order.
	Top []DiffEntry `json:"top"`
}

// heapTotals are a heap profile's inuse_space and inuse_objects.
func heapTotals(data []byte) (space, objects int64, err error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return 0, 0, fmt.Errorf("parsing a heap profile: %w", err)
	}
	sp, ob, err := inuseIndexes(p)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range p.Sample {
		space += s.Value[sp]
		objects += s.Value[ob]
	}
	return space, objects, nil
}

// DiffHeap compares two heap profiles (gzipped protobuf, as
// /debug/pprof/heap serves them): per function, the change of flat and
// cumulative inuse_space and of flat inuse_objects, the n whose flat
// inuse_space changed most first (go tool pprof -top -diff_base=base end).
func DiffHeap(base, end []byte, n int) (HeapDiff, error) {
	var d HeapDiff
	acc := map[string]*DiffEntry{}
	for _, side := range []struct {
		data []byte
		sign int64
	}{{base, -1}, {end, 1}} {
		p, err := profile.Parse(bytes.NewReader(side.data))
		if err != nil {
			return d, fmt.Errorf("parsing a heap profile: %w", err)
		}
		sp, ob, err := inuseIndexes(p)
		if err != nil {
			return d, err
		}
		for _, s := range p.Sample {
			b, o := side.sign*s.Value[sp], side.sign*s.Value[ob]
			d.InuseBytes += b
			d.InuseObjects += o
			seen := map[string]bool{}
			for i, loc := range s.Location {
				// A location's lines are innermost first (inlined calls).
				for j, line := range loc.Line {
					name := "?"
					if line.Function != nil {
						name = line.Function.Name
					}
					e := acc[name]
					if e == nil {
						e = &DiffEntry{Function: name}
						acc[name] = e
					}
					if i == 0 && j == 0 {
						e.FlatBytes += b
						e.FlatObjects += o
					}
					if !seen[name] {
						seen[name] = true
						e.CumBytes += b
					}
				}
			}
		}
	}
	for _, e := range acc {
		if e.FlatBytes != 0 || e.CumBytes != 0 {
			d.Top = append(d.Top, *e)
		}
	}
	sort.Slice(d.Top, func(i, j int) bool {
		if a, b := abs(d.Top[i].FlatBytes), abs(d.Top[j].FlatBytes); a != b {
			return a > b
		}
		return d.Top[i].Function < d.Top[j].Function
	})
	if len(d.Top) > n {
		d.Top = d.Top[:n]
	}
	return d, nil
}

// inuseIndexes are the indexes of inuse_space and inuse_objects in a heap
// profile's samples.
func inuseIndexes(p *profile.Profile) (space, objects int, err error) {
	space, objects = -1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "inuse_space":
			space = i
		case "inuse_objects":
			objects = i
		}
	}
	if space < 0 || objects < 0 {
		return 0, 0, fmt.Errorf("not a heap profile: no inuse_space and inuse_objects among %d sample types", len(p.SampleType))
	}
	return space, objects, nil
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
