package server

import (
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// hostCheck guards against DNS rebinding: a web page of another site whose
// name an attacker re-points at this server's address would otherwise read
// the API with the victim's browser. Such a request carries the attacker's
// name in Host; hostCheck answers it 421 Misdirected Request.
//
// Accepted Host values (the port is not compared):
//   - a name of Options.AllowedHosts (case-insensitive; "*.example.org"
//     matches any subdomain);
//   - an IP literal equal to the listening address, any IP literal when
//     the server listens on every interface (0.0.0.0, ::), and any
//     loopback literal when it listens on loopback: a rebinding page can
//     only ever send its own host name, never an IP literal;
//   - localhost and *.localhost when it listens on loopback or on every
//     interface (RFC 6761: these names always mean this machine);
//   - an empty Host (HTTP/1.0 clients): browsers always send one.
type hostCheck struct {
	next    http.Handler
	listen  netip.Addr // the listening IP; invalid when unknown
	allowed []string   // lower case, no trailing dot
}

func newHostCheck(next http.Handler, listen net.Addr, allowed []string) *hostCheck {
	h := &hostCheck{next: next}
	if ta, ok := listen.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok {
			h.listen = a.Unmap()
		}
	}
	for _, a := range allowed {
		if a = normalHost(a); a != "" {
			h.allowed = append(h.allowed, a)
		}
	}
	return h
}

// normalHost lower-cases a host name, drops a port, IPv6 brackets and a
// trailing dot.
func normalHost(h string) string {
	h = strings.TrimSpace(h)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func (h *hostCheck) ok(host string) bool {
	if host == "" {
		return true
	}
	name := normalHost(host)
	for _, a := range h.allowed {
		if name == a || strings.HasPrefix(a, "*.") && strings.HasSuffix(name, a[1:]) {
			return true
		}
	}
	any := !h.listen.IsValid() || h.listen.IsUnspecified()
	loop := h.listen.IsValid() && h.listen.IsLoopback()
	if ip, err := netip.ParseAddr(name); err == nil {
		ip = ip.Unmap()
		return any || ip == h.listen || loop && ip.IsLoopback()
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return any || loop
	}
	return false
}

func (h *hostCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ok(r.Host) {
		h.next.ServeHTTP(w, r)
		return
	}
	setHeaders(w)
	writeError(w, http.StatusMisdirectedRequest, fmt.Sprintf(
		"this server does not answer to the host name %q (a protection against DNS rebinding): use its address, or start it with --allowed-hosts %s",
		r.Host, normalHost(r.Host)))
}

// noDirFS serves files only: a directory opens as "not found", so that
// http.FileServer never lists one.
type noDirFS struct{ fs.FS }

func (d noDirFS) Open(name string) (fs.File, error) {
	f, err := d.FS.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return f, nil
}
