// Package redistest starts real redis-server processes for tests: a single server on a
// random loopback port with its own temporary directory, or a Redis Cluster of several
// masters. Nothing here is a mock: tests that claim distributed behaviour talk to the
// same server binary production uses.
//
// When redis-server is not on PATH, Start and StartCluster skip the test, unless the
// environment variable SPIDER_REQUIRE_REDIS is set (CI sets it), in which case they fail
// it. Every server is shut down when the test ends.
//
//	srv := redistest.Start(t, redistest.AppendOnly())
//	rdb := srv.Client()
//	srv.Kill()    // SIGKILL, like a crash
//	srv.Restart() // same port, same directory: the AOF is replayed
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server from a skipped
// test into a failed one.
const RequireEnv = "SPIDER_REQUIRE_REDIS"

// startTimeout bounds how long a server may take to answer PING after it was started
// (AOF replay included).
const startTimeout = 15 * time.Second

// Option changes how Start configures a server.
type Option func(*config)

type config struct {
	appendOnly bool
	fsync      string
	password   string
	args       []string
}

// AppendOnly turns the append-only file on (--appendonly yes) with appendfsync always, so
// that Restart after Kill finds every acknowledged write. Without it the server keeps
// nothing across a restart (persistence off: --save "" --appendonly no).
func AppendOnly() Option {
	return func(c *config) { c.appendOnly, c.fsync = true, "always" }
}

// AppendOnlyEverySec turns the append-only file on with appendfsync everysec, the usual
// production setting: a Kill may lose the last second of writes.
func AppendOnlyEverySec() Option {
	return func(c *config) { c.appendOnly, c.fsync = true, "everysec" }
}

// Password makes the server require AUTH with this password (--requirepass); Client and
// URL carry it.
func Password(pw string) Option {
	return func(c *config) { c.password = pw }
}

// Args appends raw redis-server command-line arguments, e.g. Args("--maxmemory", "64mb").
func Args(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// Server is one redis-server process owned by a test. Its methods fail the test (t.Fatal)
// when the server cannot be started or stopped; they must be called from the test's
// goroutine, as t.Fatal requires.
type Server struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	cfg  config

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts redis-server on a free port of 127.0.0.1 with a fresh temporary directory,
// waits until it answers PING and registers its shutdown with t.Cleanup. It skips the test
// when redis-server is not installed (fails it when SPIDER_REQUIRE_REDIS is set).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin := lookPath(t, "redis-server")
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), cfg: cfg}
	// A port picked by listening on :0 can be taken by someone else before redis-server
	// binds it; try a few ports before giving up.
	var err error
	for range 5 {
		s.port, err = freePort()
		if err != nil {
			break
		}
		if err = s.start(nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("cannot start redis-server: %v", err)
	}
	t.Cleanup(s.cleanup)
	return s
}

// lookPath finds a binary or skips (or fails, under RequireEnv) the test.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("cannot find %s on PATH (%v) and %s is set: install redis-server 7 (Debian package redis-server)", name, err, RequireEnv)
		}
		t.Skipf("%s not on PATH: skipping a test that needs a real Redis (set %s=1 to make this a failure)", name, RequireEnv)
	}
	return bin
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cannot find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) argv(extra []string) []string {
	aof := "no"
	if s.cfg.appendOnly {
		aof = "yes"
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", aof,
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--daemonize", "no",
		"--protected-mode", "no",
	}
	if s.cfg.fsync != "" {
		args = append(args, "--appendfsync", s.cfg.fsync)
	}
	if s.cfg.password != "" {
		args = append(args, "--requirepass", s.cfg.password)
	}
	args = append(args, s.cfg.args...)
	return append(args, extra...)
}

// start launches the process and waits for PING; on failure the process is gone.
func (s *Server) start(extra []string) error {
	cmd := exec.Command(s.bin, s.argv(extra)...)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot run %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w\n%s%s", err, out.String(), s.logTail())
	}
	return nil
}

// waitReady polls PING until the server answers PONG (not LOADING) or exits.
func (s *Server) waitReady(done <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("redis-server on port %d exited during start-up", s.port)
		default:
		}
		if err := s.ping(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d did not answer PING within %v", s.port, startTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *Server) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c := redis.NewClient(s.options())
	defer c.Close()
	return c.Ping(ctx).Err()
}

func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		return ""
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return "redis.log:\n" + string(b)
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's TCP port; it stays the same across Restart.
func (s *Server) Port() int { return s.port }

// Dir returns the server's working directory (AOF, logs, cluster config).
func (s *Server) Dir() string { return s.dir }

// URL returns the server's address as a go-redis URL, "redis://127.0.0.1:PORT/0"
// (with ":PASSWORD@" when the server requires one).
func (s *Server) URL() string {
	auth := ""
	if s.cfg.password != "" {
		auth = ":" + s.cfg.password + "@"
	}
	return "redis://" + auth + s.Addr() + "/0"
}

func (s *Server) options() *redis.Options {
	return &redis.Options{
		Addr:         s.Addr(),
		Password:     s.cfg.password,
		DialTimeout:  time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		MaxRetries:   -1,
	}
}

// Client returns a new client for this server, closed when the test ends. Each call gives
// an independent connection pool, so tests can model several nodes.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: s.cfg.password})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the server and waits for it to exit, as in a crash: nothing is
// flushed beyond what the fsync policy already wrote. Killing a stopped server is a no-op.
func (s *Server) Kill() {
	s.t.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Stop shuts the server down gracefully (SHUTDOWN NOSAVE: the AOF, when on, is flushed;
// no RDB snapshot is written) and waits for it to exit. Stopping a stopped server is a
// no-op.
func (s *Server) Stop() {
	s.t.Helper()
	if s.shutdown(5*time.Second, 10*time.Second) {
		s.t.Errorf("redis-server on port %d ignored SHUTDOWN for 10s and was killed", s.port)
	}
}

// shutdown sends SHUTDOWN NOSAVE (waiting up to ask for the command) and waits up to wait
// for the process to exit, then kills it; it reports whether it had to kill. A server that
// is not running is left alone.
func (s *Server) shutdown(ask, wait time.Duration) (killed bool) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), ask)
	defer cancel()
	c := redis.NewClient(s.options())
	// SHUTDOWN closes the connection: its error is expected and says nothing.
	_ = c.Shutdown(ctx).Err()
	_ = c.Close()
	select {
	case <-done:
		return false
	case <-time.After(wait):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return true
	}
}

// Restart starts the server again on the same port with the same directory and options,
// so that the append-only file (AppendOnly) is replayed; it stops the server first if it
// is running. It returns when the server answers PING again.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	// The old socket may linger for a moment after a kill; retry briefly.
	for range 20 {
		if err = s.start(nil); err == nil {
			return
		}
		if !strings.Contains(err.Error(), "exited during start-up") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("cannot restart redis-server on port %d: %v", s.port, err)
}

func (s *Server) cleanup() { s.shutdown(2*time.Second, 5*time.Second) }

// errNotReady is returned while a cluster is still converging.
var errNotReady = errors.New("cluster not ready")
