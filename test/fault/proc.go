package fault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Build compiles the spider command (package ./cmd/spider of the module rooted at
// moduleDir) into dir and returns the binary's path. It runs "go build -o", so nothing is
// written into the module.
func Build(ctx context.Context, moduleDir, dir string) (string, error) {
	bin := filepath.Join(dir, "spider")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/spider")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build spider in %s: %w\n%s", moduleDir, err, out)
	}
	return bin, nil
}

// Proc is one spider process started by a test: its combined output is kept, it can be
// killed with SIGKILL, and (on Linux) the kernel kills it if the test binary dies, so no
// crawler outlives its test.
type Proc struct {
	// Name labels the process in messages ("master", "peer n1" …).
	Name string
	// Started is when the process was started.
	Started time.Time

	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	err  error // valid once done is closed
}

// StartProc starts bin with args. The caller must end it: Wait for it or Kill it.
func StartProc(name, bin string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	p.Started = time.Now()
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	return p, nil
}

// PID returns the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err returns the process's exit error (nil for status 0); call it after Done.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// ExitCode returns the exit status, or -1 when the process was killed by a signal; call it
// after Done.
func (p *Proc) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// Output returns what the process wrote to stdout and stderr so far.
func (p *Proc) Output() string { return p.out.String() }

// Kill sends SIGKILL and waits for the process to exit. Killing an exited process does
// nothing.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// ErrTimeout is returned (wrapped) by Wait when the process is still running at the
// deadline.
var ErrTimeout = errors.New("process did not exit in time")

// Wait waits up to timeout for the process to exit and returns its exit error. At the
// deadline the process is killed and the error wraps ErrTimeout.
func (p *Proc) Wait(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	default:
		select {
		case <-p.done:
		case <-timer.C:
			p.Kill()
			return fmt.Errorf("%s: %w after %s\n%s", p.Name, ErrTimeout, timeout, tail(p.Output(), 3000))
		}
	}
	if p.err != nil {
		return fmt.Errorf("%s failed: %w\n%s", p.Name, p.err, tail(p.Output(), 3000))
	}
	return nil
}

// RSS returns the process's resident set size in bytes, from /proc/PID/status (Linux).
func (p *Proc) RSS() (int64, error) { return ReadRSS(p.PID()) }

// ReadRSS returns the resident set size in bytes of process pid, read from the VmRSS line
// of /proc/PID/status. It fails where /proc is missing or the process is gone.
func ReadRSS(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, fmt.Errorf("cannot read the memory of process %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("cannot read the memory of process %d: no VmRSS line in kB", pid)
}

// PeakRSS samples the process's RSS every interval until it exits and returns the largest
// value seen (0 if none could be read). It returns when the process has exited.
func (p *Proc) PeakRSS(interval time.Duration) int64 {
	var peak int64
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if v, err := p.RSS(); err == nil && v > peak {
			peak = v
		}
		select {
		case <-p.done:
			return peak
		case <-t.C:
		}
	}
}

// DirSize returns the total size in bytes of the regular files under dir (0 for a missing
// dir).
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot measure %s: %w", dir, err)
	}
	return n, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// lockedBuffer is a bytes.Buffer safe for the process's writer goroutines and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Interrupt sends SIGINT (the operator's Ctrl-C). Interrupting an exited process does
// nothing.
func (p *Proc) Interrupt() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
}
