package checks

import "sync"

// Ledger remembers, per object (by key), the value of the label the writers
// change as of the last successful write, and the values of later writes
// whose outcome is unknown (no answer or 5xx: the server may have applied
// them). Each object is written by one writer, so its writes are
// sequential. Check (c) judges the objects' final values against it.
type Ledger struct {
	// Label is the label the writers change.
	Label string

	mu      sync.Mutex
	entries map[string]*ledgerEntry
}

type ledgerEntry struct {
	lastOK    string
	uncertain []string // outcomes unknown since lastOK
	writes    int64
}

// NewLedger is an empty ledger of writes of label.
func NewLedger(label string) *Ledger {
	return &Ledger{Label: label, entries: map[string]*ledgerEntry{}}
}

func (l *Ledger) entry(k string) *ledgerEntry {
	e := l.entries[k]
	if e == nil {
		e = &ledgerEntry{}
		l.entries[k] = e
	}
	return e
}

// Baseline records the value an object had before any write.
func (l *Ledger) Baseline(k string, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	if e.writes == 0 && len(e.uncertain) == 0 {
		e.lastOK = value
	}
}

// Succeeded records a write the server confirmed.
func (l *Ledger) Succeeded(k string, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	e.lastOK = value
	e.uncertain = nil
	e.writes++
}

// Unknown records a write whose outcome is unknown.
func (l *Ledger) Unknown(k string, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	e.uncertain = append(e.uncertain, value)
}

// verdict compares an object's final value with the ledger: ok when it is the
// last successful write, uncertain when it is a write of unknown outcome,
// known=false when the ledger has nothing on the object.
func (l *Ledger) verdict(k string, final string) (ok, uncertain, known bool, want string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[k]
	if e == nil {
		return false, false, false, ""
	}
	if final == e.lastOK {
		return true, false, true, e.lastOK
	}
	for _, u := range e.uncertain {
		if final == u {
			return true, true, true, e.lastOK
		}
	}
	return false, false, true, e.lastOK
}

// SuccessfulWrites counts the writes the server confirmed.
func (l *Ledger) SuccessfulWrites() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, e := range l.entries {
		n += e.writes
	}
	return n
}
