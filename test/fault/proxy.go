package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
)

// CutMode is how Proxy.Cut breaks the link.
type CutMode int

const (
	// Blackhole holds every byte in both directions until Restore, as a partition where
	// packets are dropped and TCP retransmits: connections stay open, reads and dials hang
	// until the client's own time-outs fire, and nothing is lost or reordered if the link
	// comes back first.
	Blackhole CutMode = iota
	// Reset closes every open connection at once and every new one as soon as it is
	// accepted, as a partition where the peer answers with RST (a restarted firewall, a
	// NAT table flushed).
	Reset
)

// String returns "blackhole" or "reset".
func (m CutMode) String() string {
	if m == Reset {
		return "reset"
	}
	return "blackhole"
}

// Proxy is a TCP proxy on a loopback port that forwards every connection to one target
// and can cut and restore the link, to partition one node from a server (Redis) without
// touching the others. Each direction of a connection is copied by its own goroutine; a
// cut holds (Blackhole) or closes (Reset) them. It is safe for concurrent use.
//
// It is hand-written because the standard library has no proxy with a switch, and
// network namespaces or iptables rules would need privileges the test cannot count on.
type Proxy struct {
	target string
	ln     net.Listener
	log    *slog.Logger

	mu      sync.Mutex
	cut     bool
	mode    CutMode
	gate    chan struct{} // closed while the link is up; replaced at each Cut
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
	stopped chan struct{}
}

// StartProxy listens on 127.0.0.1 (any free port) and forwards connections to target
// ("host:port") until Close or until ctx ends. A nil logger discards.
func StartProxy(ctx context.Context, target string, logger *slog.Logger) (*Proxy, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("cannot proxy to %q: want host:port: %w", target, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the proxy: %w", err)
	}
	p := &Proxy{target: target, ln: ln, log: logger, gate: make(chan struct{}), conns: map[net.Conn]struct{}{}, stopped: make(chan struct{})}
	close(p.gate)
	p.wg.Add(1)
	go p.accept()
	go func() {
		select {
		case <-ctx.Done():
			p.Close()
		case <-p.stopped:
		}
	}()
	return p, nil
}

// Addr returns the proxy's address, "127.0.0.1:PORT": give it to the node instead of the
// target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut breaks the link in the given mode until Restore. Cutting a cut link changes only
// the mode of connections accepted from then on.
func (p *Proxy) Cut(mode CutMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.gate = make(chan struct{})
	}
	p.cut, p.mode = true, mode
	if mode == Reset {
		for c := range p.conns {
			_ = c.Close()
		}
	}
	p.log.Info("proxy link cut", "target", p.target, "mode", mode)
}

// Restore brings the link back: held bytes flow again and new connections are forwarded.
// Restoring a link that is up does nothing.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		p.cut = false
		close(p.gate)
		p.log.Info("proxy link restored", "target", p.target)
	}
}

// Close stops listening, closes every connection and waits for the proxy's goroutines.
// It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.stopped)
	err := p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	if p.cut {
		p.cut = false
		close(p.gate) // release held copies so they see their closed connections
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// track registers c; it reports false (and closes c) when the proxy is closed or the link
// is cut in Reset mode.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cut && p.mode == Reset {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

// wait blocks while the link is cut; it reports false when the proxy closed meanwhile.
func (p *Proxy) wait() bool {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	<-gate
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Warn("proxy cannot accept", "err", err)
			}
			return
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve dials the target once the link is up and copies both directions.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.wait() {
		p.untrack(client)
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.log.Warn("proxy cannot reach the target", "target", p.target, "err", err)
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.copy(server, client) }()
	go func() { defer both.Done(); p.copy(client, server) }()
	both.Wait()
	p.untrack(client, server)
}

// copy moves bytes from src to dst, holding each chunk while the link is cut. When either
// side fails, both connections are closed so the other direction ends too.
func (p *Proxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				p.log.Debug("proxy copy ended", "err", err)
			}
			return
		}
	}
}
