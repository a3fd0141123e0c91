package server

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStopAskedChildExitsOnSIGTERM(t *testing.T) {
	p, err := Start(Command{Path: "/bin/sleep", Args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	var unclean *UncleanExitError
	// sleep dies of SIGTERM: not status 0, so the stop is unclean.
	if err := p.Stop(); !errors.As(err, &unclean) {
		t.Errorf("Stop() = %v, want an UncleanExitError", err)
	}
	if p.Died() {
		t.Error("Died() after Stop, want false")
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", `trap "" TERM; echo ignoring >&2; sleep 60 & wait`}, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let the shell install its trap
	start := time.Now()
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "did not stop within") {
		t.Errorf("Stop() = %v, want the SIGKILL error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %s", d)
	}
	if !strings.Contains(p.Stderr(), "ignoring") {
		t.Errorf("stderr %q, want the child's line", p.Stderr())
	}
}

func TestDiedOnItsOwn(t *testing.T) {
	p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", "echo out; echo 'fatal error: concurrent map writes' >&2; exit 2"}, MergeStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("child did not exit")
	}
	if !p.Died() || p.ExitError() == nil {
		t.Errorf("Died() = %t, ExitError() = %v; want true and an error", p.Died(), p.ExitError())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop() after death = %v, want nil", err)
	}
	if f := p.Fatal(); f == nil || f.Signature != SigConcurrentMapWrites {
		t.Errorf("Fatal() = %v", f)
	}
	if !strings.Contains(p.Stderr(), "out\n") {
		t.Errorf("MergeStdout: stderr %q lacks stdout", p.Stderr())
	}
}

func TestTailLines(t *testing.T) {
	if got := TailLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("TailLines = %q", got)
	}
}
