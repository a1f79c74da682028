package fetch

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// fullListener returns the address of a loopback socket listening with a
// backlog of 0 whose accept queue has been filled: Linux drops further
// SYNs, so connecting to it hangs until the connect time-out.
func fullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Skipf("cannot create socket: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Skipf("cannot bind: %v", err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Skipf("cannot listen: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Skipf("cannot get socket name: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return addr // the queue is full
		}
		t.Cleanup(func() { conn.Close() })
	}
	t.Skip("the accept queue never filled; cannot provoke a connect time-out here")
	return ""
}
