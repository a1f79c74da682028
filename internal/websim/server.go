package websim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Server serves a Web on loopback. The embedded *Web gives URL, Hosts, SeedURLs,
// Resolve, Log, Truth and Handler.
type Server struct {
	*Web
	srv       *http.Server
	listeners []net.Listener
	wg        sync.WaitGroup
	once      sync.Once
	stopCtx   func() bool
}

// Start builds the web of cfg and serves it on cfg.Addr (default 127.0.0.1:0), which
// must be a loopback address (ErrNotLoopback otherwise). With cfg.PerIP it also listens
// on every host's own address (HostAddr) on the same port. Config.Port is set to the
// listening port, so generated URLs point at this server. The server stops when ctx is
// cancelled or Close is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	ap, err := loopbackAddr(s.Addr)
	if err != nil {
		return nil, err
	}
	var ls []net.Listener
	for attempt := 0; ; attempt++ {
		ls, err = listenAll(ctx, ap, s.PerIP, s.Hosts)
		if err == nil || ap.Port() != 0 || attempt == 4 || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	cfg.Port = ls[0].Addr().(*net.TCPAddr).Port
	web, err := New(cfg)
	if err != nil {
		closeAll(ls)
		return nil, err
	}
	srv := &Server{
		Web:       web,
		listeners: ls,
		srv: &http.Server{
			Handler:           web.Handler(),
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          slog.NewLogLogger(web.cfg.Logger.Handler(), slog.LevelDebug),
		},
	}
	for _, l := range ls {
		srv.wg.Add(1)
		go func() {
			defer srv.wg.Done()
			if err := srv.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				web.cfg.Logger.Warn("websim listener stopped", "addr", l.Addr(), "err", err)
			}
		}()
	}
	srv.stopCtx = context.AfterFunc(ctx, func() { _ = srv.Close() })
	return srv, nil
}

// loopbackAddr parses addr and refuses anything but a loopback IP (or "localhost").
func loopbackAddr(addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cannot parse listen address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cannot parse port of listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return netip.AddrPort{}, fmt.Errorf("cannot listen on %q: %w: use 127.0.0.1 or another 127.x.y.z address", addr, ErrNotLoopback)
	}
	return netip.AddrPortFrom(ip, uint16(p)), nil
}

// listenAll listens on ap and, with perIP, on every host address at the same port.
func listenAll(ctx context.Context, ap netip.AddrPort, perIP bool, hosts int) ([]net.Listener, error) {
	var lc net.ListenConfig
	first, err := lc.Listen(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s: %w", ap, err)
	}
	ls := []net.Listener{first}
	if !perIP {
		return ls, nil
	}
	port := uint16(first.Addr().(*net.TCPAddr).Port)
	for i := range hosts {
		a := HostAddr(i)
		if a == ap.Addr() {
			continue
		}
		l, err := lc.Listen(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err != nil {
			closeAll(ls)
			return nil, fmt.Errorf("cannot listen on host address %s: %w", netip.AddrPortFrom(a, port), err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}

// Addr returns the main listening address ("127.0.0.1:PORT").
func (s *Server) Addr() string { return s.listeners[0].Addr().String() }

// Close stops the server: it ends hanging requests, closes the listeners and every
// connection, and waits until every request is recorded in the access log. It is
// idempotent and returns nil.
func (s *Server) Close() error {
	s.once.Do(func() {
		if s.stopCtx != nil {
			s.stopCtx()
		}
		s.Web.shutdown()
		_ = s.srv.Close()
		s.wg.Wait()
		s.Web.active.Wait() // every request is in the access log

	})
	return nil
}
