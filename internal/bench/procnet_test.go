package bench

import (
	"net"
	"os"
	"testing"
)

func TestProcAddr(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"127.0.0.1:80", "0100007F:0050"},
		{"10.1.2.3:65535", "0302010A:FFFF"},
		{"[::1]:80", ""},
		{"nonsense", ""},
	} {
		if got := procAddr(tt.in); got != tt.want {
			t.Errorf("procAddr(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// socketOwner finds the process holding a connection's client end: this
// one, for a connection it opened; nobody among other processes.
func TestSocketOwnerFindsTheSender(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	remote, local := s.RemoteAddr().String(), s.LocalAddr().String()
	if got := socketOwner(remote, local, []int{os.Getppid(), os.Getpid()}); got != os.Getpid() {
		t.Errorf("socketOwner = %d; want this process, %d", got, os.Getpid())
	}
	if got := socketOwner(remote, local, []int{os.Getppid()}); got != -1 {
		t.Errorf("socketOwner among others = %d; want -1", got)
	}
}
