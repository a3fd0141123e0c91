package cachemutation

import (
	"io"
	"os"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain silences klog: the detector's finding lines (the tests read
// findings through OnFinding) and the etcd client's reconnect warnings
// after each in-process etcd stops, which would also break benchmark output
// for benchstat.
func TestMain(m *testing.M) {
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	os.Exit(m.Run())
}
