package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveOn runs s.Serve on a loopback listener at addr and returns the
// listener's port.
func serveOn(t *testing.T, s *Server, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// get sends GET path to the loopback address ip:port with the given Host
// header, over real HTTP.
func getHost(t *testing.T, ip string, port int, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", fmt.Sprintf("http://%s%s", net.JoinHostPort(ip, fmt.Sprint(port)), path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostHeader: DNS rebinding protection over real HTTP on loopback.
func TestHostHeader(t *testing.T) {
	s := newTestServer(t, Options{Crawl: &fakeCrawl{testStatus()}, AllowedHosts: []string{"search.example.org", "*.intra.example"}})
	port := serveOn(t, s, "127.0.0.1:0")
	p := fmt.Sprint(port)
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:" + p, 200},
		{"127.0.0.1", 200},
		{"localhost:" + p, 200},
		{"LOCALHOST.:" + p, 200},
		{"app.localhost:" + p, 200},
		{"[::1]:" + p, 200},         // loopback literal on a loopback listener
		{"127.0.0.2:" + p, 200},     // loopback literal
		{"search.example.org", 200}, // --allowed-hosts
		{"Search.Example.Org:" + p, 200},
		{"a.intra.example:" + p, 200}, // wildcard
		{"evil.example:" + p, 421},    // a rebinding page's own name
		{"evil.example", 421},
		{"intra.example", 421}, // the wildcard wants a subdomain
		{"search.example.org.evil.test", 421},
		{"10.0.0.1:" + p, 421}, // not this server's address
		{"localhost.evil.test", 421},
	}
	for _, tt := range tests {
		for _, path := range []string{"/api/crawl", "/healthz"} {
			code, body := getHost(t, "127.0.0.1", port, tt.host, path)
			if code != tt.want {
				t.Errorf("Host %q %s: status %d, want %d: %s", tt.host, path, code, tt.want, body)
			}
			if code == 421 && (!strings.Contains(body, "DNS rebinding") || !strings.Contains(body, "--allowed-hosts")) {
				t.Errorf("Host %q: 421 body does not say why and what to do: %s", tt.host, body)
			}
		}
	}
}

// TestHostHeaderEveryInterface: listening on every interface, IP
// literals and localhost pass, other names still need --allowed-hosts.
func TestHostHeaderEveryInterface(t *testing.T) {
	s := newTestServer(t, Options{})
	port := serveOn(t, s, "0.0.0.0:0")
	for host, want := range map[string]int{"127.0.0.1": 200, "192.0.2.7": 200, "localhost": 200, "rebind.example": 421} {
		if code, body := getHost(t, "127.0.0.1", port, host, "/healthz"); code != want {
			t.Errorf("Host %q: %d, want %d: %s", host, code, want, body)
		}
	}
}

// TestStaticNoListing: /static/ serves its files but never lists a
// directory, over real HTTP.
func TestStaticNoListing(t *testing.T) {
	s := newTestServer(t, Options{})
	port := serveOn(t, s, "127.0.0.1:0")
	host := fmt.Sprintf("127.0.0.1:%d", port)
	for path, want := range map[string]int{
		"/static/":            404,
		"/static":             404,
		"/static/.":           404,
		"/static/style.css":   200,
		"/static/search.js":   200,
		"/static/./style.css": 200,
	} {
		code, body := getHost(t, "127.0.0.1", port, host, path)
		if code != want {
			t.Errorf("%s: status %d, want %d", path, code, want)
		}
		if strings.Contains(body, "dashboard.js") && strings.Contains(body, "style.css") {
			t.Errorf("%s lists the directory:\n%s", path, body)
		}
	}
}
