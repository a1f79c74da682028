package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// proc is one spider process of the cluster run. It runs in its own process
// group and dies with the benchmark (Pdeathsig), so neither a Ctrl-C in the
// terminal nor a crash of the benchmark leaves it running.
type proc struct {
	Name    string
	Args    []string
	Data    string
	LogFile string

	cmd   *exec.Cmd
	out   *tailWriter
	file  *os.File
	done  chan struct{}
	start time.Time
	err   error // set when done: nil for exit 0
}

func (p *proc) begin(bin string) error {
	f, err := os.Create(p.LogFile)
	if err != nil {
		return fmt.Errorf("cannot create the log of %s: %w", p.Name, err)
	}
	p.file = f
	p.out = &tailWriter{f: f}
	p.cmd = exec.Command(bin, p.Args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p.done = make(chan struct{})
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("cannot start %s: %w", p.Name, err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		if err != nil {
			p.err = fmt.Errorf("%s: %w", p.Name, err)
		}
		p.file.Close()
	}()
	return nil
}

// exited reports whether p has ended.
func (p *proc) exited() bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to p if it still runs.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// wait waits up to grace for p to end, then kills it. It reports whether p
// ended by itself.
func (p *proc) wait(grace time.Duration) bool {
	if p.done == nil {
		return true
	}
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

// stopAll sends SIGTERM to every process, waits up to grace for each, and
// kills those still running.
func stopAll(ps []*proc, grace time.Duration) {
	for _, p := range ps {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range ps {
		if !p.wait(grace) {
			fmt.Fprintf(os.Stderr, "topics bench: %s did not stop within %s of SIGTERM: killed\n", p.Name, grace)
		}
	}
}

// tailWriter writes everything to f and keeps the last 4 KiB for error
// messages.
type tailWriter struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.f.Write(b)
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-4096:]...)
	}
	return len(b), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
