package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one spider process of a run.
type proc struct {
	Name string   // "A", "master", "w1" …
	Args []string // arguments after the binary
	Data string   // its --data directory

	Wall    time.Duration
	CPU     time.Duration // user + system
	Exit    int           // -1 when killed by a signal
	Err     error         // could not start, or exited with an error
	Output  string        // the end of its combined stdout and stderr
	LogFile string        // where its whole stdout and stderr went ("" : memory only)
	cmd     *exec.Cmd
	buf     *bytes.Buffer
	file    *os.File
	done    chan struct{}
	start   time.Time
	finish  time.Time
}

// begin starts p with the binary bin. The process dies with the benchmark.
func (p *proc) begin(bin string) error {
	p.cmd = exec.Command(bin, p.Args...)
	p.buf = &bytes.Buffer{}
	w := &lockedWriter{w: p.buf}
	if p.LogFile != "" {
		f, err := os.Create(p.LogFile)
		if err != nil {
			return fmt.Errorf("cannot create the log of %s: %w", p.Name, err)
		}
		p.file, w.f = f, f
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p.done = make(chan struct{})
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", p.Name, err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		p.finish = time.Now()
		p.Wall = p.finish.Sub(p.start)
		st := p.cmd.ProcessState
		p.CPU = st.UserTime() + st.SystemTime()
		p.Exit = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.Exit = -1
		}
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			p.Err = err
		} else if p.Exit != 0 {
			p.Err = fmt.Errorf("%s exited with %d", p.Name, p.Exit)
		}
		w.mu.Lock()
		p.Output = tail(p.buf.String(), 2000)
		if p.file != nil {
			p.file.Close()
		}
		w.mu.Unlock()
	}()
	return nil
}

// stop sends SIGTERM to p (then SIGKILL after grace) if it still runs.
func (p *proc) stop(grace time.Duration) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
	f  *os.File // also gets everything, when not nil
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Write(b)
	}
	if l.w.Len() > 1<<20 { // keep memory bounded; the tail is what matters
		rest := l.w.Bytes()[l.w.Len()-64<<10:]
		l.w = bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return l.w.Write(b)
}

// errTimeout reports a run that did not end by itself in time: a hang.
var errTimeout = errors.New("run did not finish in time")

// errStall reports a run whose processes still run although the web has
// seen no request for a while: a hang.
var errStall = errors.New("hang")

// runProcs starts every process (in order, stagger apart) and waits until
// all have exited or timeout passes; then it stops the rest and returns
// errTimeout naming them. tick, when not nil, is called every 200 ms while
// the processes run; when it returns an error, the processes still running
// are stopped and the error is returned with their names.
func runProcs(ctx context.Context, bin string, ps []*proc, stagger, timeout time.Duration, tick func() error) error {
	deadline := time.Now().Add(timeout)
	for i, p := range ps {
		if i > 0 && stagger > 0 {
			time.Sleep(stagger)
		}
		if err := p.begin(bin); err != nil {
			for _, q := range ps[:i] {
				q.stop(2 * time.Second)
			}
			return err
		}
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		alive := 0
		for _, p := range ps {
			select {
			case <-p.done:
			default:
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		var tickErr error
		if tick != nil {
			tickErr = tick()
		}
		if ctx.Err() != nil || time.Now().After(deadline) || tickErr != nil {
			var names []string
			for _, p := range ps {
				select {
				case <-p.done:
				default:
					names = append(names, p.Name)
				}
			}
			for _, p := range ps {
				p.stop(3 * time.Second)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if tickErr != nil {
				return fmt.Errorf("%w: %s still running, stopped", tickErr, strings.Join(names, ", "))
			}
			return fmt.Errorf("%w (%s): %s still running, stopped", errTimeout, timeout, strings.Join(names, ", "))
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// firstStart is the earliest start of ps.
func firstStart(ps []*proc) time.Time {
	var first time.Time
	for _, p := range ps {
		if first.IsZero() || p.start.Before(first) {
			first = p.start
		}
	}
	return first
}

// span is the time from the first start to the last exit of ps.
func span(ps []*proc) time.Duration {
	var first, last time.Time
	for _, p := range ps {
		if first.IsZero() || p.start.Before(first) {
			first = p.start
		}
		if p.finish.After(last) {
			last = p.finish
		}
	}
	return last.Sub(first)
}

// buildSpider builds cmd/spider of the repository at root into dir.
func buildSpider(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "spider")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/spider")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("cannot build spider: %w\n%s", err, out)
	}
	return bin, nil
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
