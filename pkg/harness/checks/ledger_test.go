package checks

import "testing"

func TestLedger(t *testing.T) {
	l := NewLedger("gen")
	k := "configmaps a|x"
	l.Baseline(k, "seed")
	if ok, _, known, _ := l.verdict(k, "seed"); !ok || !known {
		t.Error("baseline not accepted")
	}
	l.Succeeded(k, "w0-1")
	l.Unknown(k, "w0-2")
	if ok, unc, _, _ := l.verdict(k, "w0-2"); !ok || !unc {
		t.Error("a write of unknown outcome must be accepted as uncertain")
	}
	if ok, _, _, want := l.verdict(k, "seed"); ok || want != "w0-1" {
		t.Errorf("lost write accepted, want %q", want)
	}
	l.Baseline(k, "later") // ignored after writes
	if _, _, _, want := l.verdict(k, ""); want != "w0-1" {
		t.Errorf("baseline after writes overwrote the ledger: %q", want)
	}
	if _, _, known, _ := l.verdict("other", ""); known {
		t.Error("unknown object reported known")
	}
	if n := l.SuccessfulWrites(); n != 1 {
		t.Errorf("%d successful writes, want 1", n)
	}
}
