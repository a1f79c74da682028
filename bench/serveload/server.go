package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildSpider builds cmd/spider into dir and returns the binary's path.
// It runs go build in the module root (found with go env GOMOD), so the
// bench works from any directory of the checkout.
func buildSpider(ctx context.Context, dir string) (string, error) {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("cannot find the module root (go env GOMOD): %w; give --bin PATH to a built spider binary", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if root == "." || root == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return "", errors.New("cannot find the module root: run the bench inside the spider checkout or give --bin PATH")
	}
	bin := filepath.Join(dir, "spider")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/spider")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build spider: %w\n%s", err, out)
	}
	return bin, nil
}

// server is a running `spider serve` process.
type server struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	pprof  string // http://127.0.0.1:PORT of --pprof, "" without it
	stderr *tailBuffer
	done   chan error
}

var (
	servingRE = regexp.MustCompile(`serving on (http://[^/ ]+)/`)
	pprofRE   = regexp.MustCompile(`pprof on (http://[^/ ]+)/`)
)

// startServer runs bin serve --data data --addr 127.0.0.1:0 plus extra
// arguments, reads its address from its "serving on" line and waits until
// /healthz answers.
func startServer(ctx context.Context, bin, data string, extra []string, env []string) (*server, error) {
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", bin, err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	go func() { s.done <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for s.base == "" || (s.pprof == "" && hasFlag(extra, "--pprof")) {
		select {
		case line, ok := <-lines:
			if !ok {
				s.stop()
				return nil, fmt.Errorf("spider serve exited before serving:\n%s", s.stderr)
			}
			if m := servingRE.FindStringSubmatch(line); m != nil {
				s.base = m[1]
			}
			if m := pprofRE.FindStringSubmatch(line); m != nil {
				s.pprof = m[1]
			}
		case <-deadline:
			s.stop()
			return nil, fmt.Errorf("spider serve printed no address within 2 minutes:\n%s", s.stderr)
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
	}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(s.base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s, nil
			}
		}
		if time.Since(start) > time.Minute {
			s.stop()
			return nil, fmt.Errorf("spider serve's /healthz did not answer 200 within a minute: %v\n%s", err, s.stderr)
		}
	}
}

func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// stop interrupts the server and waits for it (killing it after 10 s).
func (s *server) stop() error {
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.done:
		s.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) && !ee.Exited() {
			return nil // ended by the signal
		}
		return err
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		return errors.New("spider serve did not stop within 10 s of SIGINT; killed it")
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	mu  sync.Mutex
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
