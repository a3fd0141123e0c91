package cachemutation

// TB is the part of testing.TB NewForTest uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Cleanup(func())
}

// NewForTest returns a Detector whose findings fail t (t.Errorf, then opts.OnFinding
// if set). At cleanup it compares every tracked object once more and stops.
func NewForTest(t TB, opts Options) *Detector {
	t.Helper()
	next := opts.OnFinding
	opts.OnFinding = func(f Finding) {
		t.Errorf("cache mutation detector: %s\n%s", f, f.Diff)
		if next != nil {
			next(f)
		}
	}
	d := New(opts)
	t.Cleanup(d.Stop)
	return d
}
