package hammer

import "sync"

// ledger remembers, per object, the label value of the last successful write,
// and the values of later writes whose outcome is unknown (no answer or 5xx:
// the server may have applied them). Each object is written by one writer, so
// its writes are sequential.
type ledger struct {
	mu      sync.Mutex
	entries map[ObjectKey]*ledgerEntry
}

type ledgerEntry struct {
	lastOK    string
	uncertain []string // outcomes unknown since lastOK
	writes    int64
}

func newLedger() *ledger { return &ledger{entries: map[ObjectKey]*ledgerEntry{}} }

func (l *ledger) entry(k ObjectKey) *ledgerEntry {
	e := l.entries[k]
	if e == nil {
		e = &ledgerEntry{}
		l.entries[k] = e
	}
	return e
}

// baseline records the value an object had before any write.
func (l *ledger) baseline(k ObjectKey, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	if e.writes == 0 && len(e.uncertain) == 0 {
		e.lastOK = value
	}
}

// succeeded records a write the server confirmed.
func (l *ledger) succeeded(k ObjectKey, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	e.lastOK = value
	e.uncertain = nil
	e.writes++
}

// unknown records a write whose outcome is unknown.
func (l *ledger) unknown(k ObjectKey, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(k)
	e.uncertain = append(e.uncertain, value)
}

// verdict compares an object's final value with the ledger: ok when it is the
// last successful write, uncertain when it is a write of unknown outcome,
// known=false when the ledger has nothing on the object.
func (l *ledger) verdict(k ObjectKey, final string) (ok, uncertain, known bool, want string) {
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

func (l *ledger) successfulWrites() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, e := range l.entries {
		n += e.writes
	}
	return n
}
