package hammer

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// Death is what the hammer knows about the server going away.
type Death struct {
	Died bool `json:"died"`
	// At is when the first failure of the fatal streak happened (or when the
	// process was reported gone, if no request noticed first).
	At time.Time `json:"at,omitzero"`
	// Phase is the run phase the server died in: seed, sync, load, probe, after-checks.
	Phase string `json:"phase,omitempty"`
	// SuccessesBefore is how many requests succeeded before it died.
	SuccessesBefore int64 `json:"successesBefore"`
	// Evidence says how the hammer knows: the failure streak and the dial check.
	Evidence string `json:"evidence,omitempty"`
}

// deathWatch turns a storm of transport errors after successes into "the
// server died": after threshold transport errors in a row it dials the
// server; a refused or failing dial confirms.
type deathWatch struct {
	mu          sync.Mutex
	threshold   int
	dial        func(ctx context.Context) error
	onDeath     func()
	successes   int64
	streak      int
	streakStart time.Time
	firstErr    string
	phase       string
	death       Death
	confirming  bool
}

func newDeathWatch(threshold int, dial func(ctx context.Context) error, onDeath func()) *deathWatch {
	return &deathWatch{threshold: threshold, dial: dial, onDeath: onDeath}
}

// dialer returns a dial check against host:port.
func dialer(hostport string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", hostport)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

func (d *deathWatch) setPhase(p string) {
	d.mu.Lock()
	d.phase = p
	d.mu.Unlock()
}

func (d *deathWatch) success() {
	d.mu.Lock()
	d.successes++
	d.streak = 0
	d.mu.Unlock()
}

// transportError records a failed request that got no HTTP answer at t.
func (d *deathWatch) transportError(t time.Time, err error) {
	d.mu.Lock()
	if d.death.Died {
		d.mu.Unlock()
		return
	}
	if d.streak == 0 {
		d.streakStart = t
		d.firstErr = err.Error()
	}
	d.streak++
	check := d.successes > 0 && d.streak >= d.threshold && !d.confirming
	if check {
		d.confirming = true
	}
	streak, start, first := d.streak, d.streakStart, d.firstErr
	d.mu.Unlock()
	if !check {
		return
	}
	dialErr := d.dial(context.Background())
	d.mu.Lock()
	d.confirming = false
	if dialErr == nil || d.death.Died {
		// Still listening: slow or overloaded, not dead. Check again after
		// another threshold of failures.
		if !d.death.Died {
			d.streak = 0
		}
		d.mu.Unlock()
		return
	}
	d.death = Death{
		Died:            true,
		At:              start,
		Phase:           d.phase,
		SuccessesBefore: d.successes,
		Evidence:        fmt.Sprintf("%d transport errors in a row after %d successes, first: %s; dial: %v", streak, d.successes, first, dialErr),
	}
	d.mu.Unlock()
	if d.onDeath != nil {
		d.onDeath()
	}
}

// exited records that the server process is known to be gone.
func (d *deathWatch) exited(t time.Time) {
	d.mu.Lock()
	if d.death.Died {
		d.mu.Unlock()
		return
	}
	at := t
	if d.streak > 0 && d.streakStart.Before(t) {
		at = d.streakStart
	}
	d.death = Death{Died: true, At: at, Phase: d.phase, SuccessesBefore: d.successes, Evidence: "the server process exited"}
	if d.streak > 0 {
		d.death.Evidence += "; first failure: " + d.firstErr
	}
	d.mu.Unlock()
	if d.onDeath != nil {
		d.onDeath()
	}
}

func (d *deathWatch) state() Death {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.death
}

func (d *deathWatch) dead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.death.Died
}
