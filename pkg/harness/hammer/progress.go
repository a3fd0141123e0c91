package hammer

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/term"
)

// IsTerminal reports whether f is a terminal, where a live progress line
// makes sense (/dev/null is a character device but not a terminal).
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// progress writes a live status line to opts.Progress every half second
// until stop is called; stop ends the line.
func (r *run) progress() (stop func()) {
	w := r.opts.Progress
	if w == nil {
		return func() {}
	}
	start := time.Now()
	total0, failed0 := r.rec.counts() // seeding is not the load
	done := make(chan struct{})
	finished := make(chan struct{})
	line := func() {
		total, failed := r.rec.counts()
		total, failed = total-total0, failed-failed0
		el := time.Since(start)
		state := "alive"
		if r.death.dead() {
			state = "DIED"
		}
		fmt.Fprintf(w, "\r\033[K[%5.1fs/%s] %d req (%.0f/s), %d failed · %d partial items · %d watch events · %d writes · server %s",
			el.Seconds(), r.opts.Duration, total, float64(total)/el.Seconds(), failed,
			r.partialItems.Load(), r.watchEvents.Load(), r.ledger.SuccessfulWrites(), state)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				line()
				fmt.Fprintln(w)
				return
			case <-t.C:
				line()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
