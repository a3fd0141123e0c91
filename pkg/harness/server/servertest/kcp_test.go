package servertest_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kcp-carry/kcp-carry/pkg/harness/server"
	"github.com/kcp-carry/kcp-carry/pkg/harness/server/servertest"
)

// errorRecorder is a testing.TB that keeps the errors it is given.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Helper() {}
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// A server run with the switch on must say it made a detector; one run
// without it is not asked to.
func TestExpectCacheMutationDetectorHonoured(t *testing.T) {
	const made = `echo 'W1203 17:25:01.000000   1 mutation_detector.go:54] Mutation detector is enabled, this will result in memory leakage.' >&2`
	for _, tt := range []struct {
		name   string
		env    string
		script string
		fails  bool
	}{
		{"on, made", server.CacheMutationDetectorOn, made, false},
		{"on, none made", server.CacheMutationDetectorOn, "true", true},
		{"off, none made", server.CacheMutationDetectorOff, "true", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := server.Start(server.Command{Path: "/bin/sh", Args: []string{"-c", tt.script}, Env: append(os.Environ(), tt.env)})
			if err != nil {
				t.Fatal(err)
			}
			<-s.Done()
			rec := &errorRecorder{TB: t}
			servertest.ExpectCacheMutationDetectorHonoured(rec, "sh", s)
			if got := len(rec.errors) > 0; got != tt.fails {
				t.Errorf("failed = %v (%q), want %v", got, rec.errors, tt.fails)
			}
		})
	}
}
