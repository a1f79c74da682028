package fault

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes a line and reads it back within timeout.
func roundTrip(c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return got, err
}

func TestProxyCutRestore(t *testing.T) {
	target := echoServer(t)
	for _, tc := range []struct {
		mode CutMode
		// during the cut: does an open connection fail (true) or only stall (false)?
		fails bool
	}{
		{Blackhole, false},
		{Reset, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			p, err := StartProxy(context.Background(), target, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := bufio.NewReader(c)
			if got, err := roundTrip(c, r, "one", 5*time.Second); err != nil || got != "one\n" {
				t.Fatalf("before the cut: %q, %v", got, err)
			}
			p.Cut(tc.mode)
			_, err = roundTrip(c, r, "two", 300*time.Millisecond)
			var ne net.Error
			switch {
			case err == nil:
				t.Fatal("a line went through a cut link")
			case tc.fails && errors.As(err, &ne) && ne.Timeout():
				t.Fatalf("reset mode: the connection stalled instead of failing: %v", err)
			case !tc.fails && !(errors.As(err, &ne) && ne.Timeout()):
				t.Fatalf("blackhole mode: want a time-out, got %v", err)
			}
			// A new connection made during the cut gets nothing through either.
			c2, err := net.Dial("tcp", p.Addr())
			if err == nil {
				r2 := bufio.NewReader(c2)
				if got, err := roundTrip(c2, r2, "three", 300*time.Millisecond); err == nil {
					t.Fatalf("a new connection passed a cut link: %q", got)
				}
				c2.Close()
			}
			p.Restore()
			if !tc.fails {
				// The held line arrives once the link is back: nothing lost, nothing reordered.
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if got, err := r.ReadString('\n'); err != nil || got != "two\n" {
					t.Fatalf("after restore, the held line: %q, %v", got, err)
				}
				if got, err := roundTrip(c, r, "four", 5*time.Second); err != nil || got != "four\n" {
					t.Fatalf("after restore: %q, %v", got, err)
				}
			}
			c3, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c3.Close()
			if got, err := roundTrip(c3, bufio.NewReader(c3), "five", 5*time.Second); err != nil || got != "five\n" {
				t.Fatalf("new connection after restore: %q, %v", got, err)
			}
		})
	}
}

func TestProxyRejectsBadTarget(t *testing.T) {
	if _, err := StartProxy(context.Background(), "no-port", nil); err == nil {
		t.Fatal("a target without a port was accepted")
	}
}

func TestProxyClose(t *testing.T) {
	p, err := StartProxy(context.Background(), echoServer(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Cut(Blackhole)
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a cut link")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestReadRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc here: RSS is not measured on this system")
	}
	p, err := StartProc("sleep", "sleep", "5")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	n, err := p.RSS()
	if err != nil {
		t.Fatalf("cannot read the RSS of a running process: %v", err) // the hostile cases' memory bound depends on it
	}
	if n <= 0 || n > 1<<30 {
		t.Fatalf("RSS of sleep: %d bytes", n)
	}
	p.Kill()
	if p.ExitCode() != -1 {
		t.Fatalf("exit code of a killed process: %d, want -1", p.ExitCode())
	}
	if _, err := ReadRSS(p.PID()); err == nil {
		t.Fatal("read the RSS of a dead process")
	}
}

func TestTable(t *testing.T) {
	rows := []Row{{Fault: "f", Runs: 2, Faults: 3, URLs: 10, Lost: 0, Repeats: 1, Bound: 8, RecoveryMax: 1500 * time.Millisecond,
		RecoveryMean: time.Second, Equal: "yes", Seed: 7, Note: "n", BodiesChecked: 40, WrongBodies: 1, DroppedBytes: 512}, {Fault: "g"}}
	path := t.TempDir() + "/r.jsonl"
	for _, r := range rows {
		if err := AppendRow(path, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadRows(path)
	if err != nil || len(got) != 2 || got[0] != rows[0] {
		t.Fatalf("read back %+v, %v", got, err)
	}
	want := "| f | 2 | 3 | 10 | 0 | 1 (of 40) | 512 | 1 (≤ 8) | 0 | 1.5s / 1s | yes | 7 | n |\n| g | 0 | 0 | 0 | 0 | — | — | 0 (≤ 0) | 0 | n/a | — | 0 |  |\n"
	if tb := Table(got); !endsWith(tb, want) {
		t.Fatalf("table:\n%s\nwant rows:\n%s", tb, want)
	}
}

func endsWith(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}
