// Package redisproc starts redis-server processes for the benchmark
// programs (bench/distbench, bench/protocol): loopback only, persistence
// off, each in its own directory, killed with the benchmark.
package redisproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by the benchmark: loopback
// only, persistence off, its own directory.
type Server struct {
	Addr   string        // host:port on loopback
	Dir    string        // working directory (redis.log is there)
	Client *redis.Client // a client of the server, closed by Close
	cmd    *exec.Cmd
	done   chan error
}

// Start starts redis-server on a free loopback port with dir as its
// working directory and waits until it answers PING.
func Start(ctx context.Context, dir string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("cannot find redis-server on PATH (apt-get install redis-server): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create the Redis directory: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		return nil, fmt.Errorf("cannot create the Redis log: %w", err)
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("cannot start redis-server: %w", err)
	}
	s := &Server{cmd: cmd, Addr: addr, Dir: dir, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); logf.Close() }()
	s.Client = redis.NewClient(&redis.Options{Addr: addr})
	deadline := time.Now().Add(10 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.Client.Ping(pctx).Err()
		cancel()
		if err == nil {
			return s, nil
		}
		select {
		case werr := <-s.done:
			s.Client.Close()
			return nil, fmt.Errorf("redis-server exited at start (see %s): %v", filepath.Join(dir, "redis.log"), werr)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Close()
			return nil, fmt.Errorf("cannot reach redis-server at %s after 10s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// URL is the server's address as spider's --redis flag takes it.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Close shuts the server down and waits for it.
func (s *Server) Close() {
	if s.Client != nil {
		s.Client.Close()
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
