package server

import (
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
)

func TestListenersSeesOwnLoopbackSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := netip.MustParseAddrPort(l.Addr().String())
	got, err := Listeners(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, want) {
		t.Errorf("Listeners(self) = %v, want it to contain %s", got, want)
	}
	l.Close()
	got, err = Listeners(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, want) {
		t.Errorf("Listeners(self) = %v after Close, still has %s", got, want)
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"00000000000000000000000000000000:0016": "[::]:22",
	} {
		got, err := parseProcAddr(in)
		if err != nil || got.String() != want {
			t.Errorf("parseProcAddr(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := parseProcAddr("zz:1"); err == nil {
		t.Error("parseProcAddr(zz:1): want an error")
	}
}
