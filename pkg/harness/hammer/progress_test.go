package hammer

import (
	"os"
	"testing"
)

// /dev/null is a character device; a stat-based check took it for a terminal
// and drew progress lines into redirected output.
func TestIsTerminalDevNull(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Errorf("IsTerminal(%s) = true, want false", os.DevNull)
	}
}
