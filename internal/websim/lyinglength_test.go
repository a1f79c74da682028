package websim

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// rawGet sends a GET for path to srv over a fresh connection and returns the parsed
// response head, the body (the announced length of an honest answer; for a lying one,
// the bytes that arrived before the connection closed), and how long that took.
func rawGet(t *testing.T, srv *Server, host, path string) (*http.Response, []byte, time.Duration) {
	t.Helper()
	start := time.Now()
	c, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength >= 0 && resp.ContentLength < 1<<20 {
		body, _ := io.ReadAll(resp.Body) // an honest answer: its announced length
		return resp, body, time.Since(start)
	}
	// A lying answer: read what the server sends until it closes.
	body, _ := io.ReadAll(br)
	return resp, body, time.Since(start)
}

// TestLyingLength checks the lying-length pages over real HTTP: the announced
// Content-Length, the short (or missing) body, the close (after HangTime for the stall),
// and 404 when Config.LyingLength is off.
func TestLyingLength(t *testing.T) {
	const hang = 300 * time.Millisecond
	tests := []struct {
		name      string
		on        bool
		path      string
		status    int
		length    int64
		body      string
		minTime   time.Duration
		maxLength int // upper bound of the body received
	}{
		{"huge length, short body", true, "/x/len-huge/1", 200, HugeContentLength, "<html><body>short</body></html>\n", 0, 64},
		{"4e9 length, no body, stall", true, "/x/len-stall/2", 200, StallContentLength, "", hang, 0},
		{"1 GiB length, no body, stall", true, "/x/len-cap/3", 200, CapContentLength, "", hang, 0},
		{"off: huge is 404", false, "/x/len-huge/1", 404, -2, "", 0, 1 << 20},
		{"off: stall is 404", false, "/x/len-stall/2", 404, -2, "", 0, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start(context.Background(), Config{Seed: 1, Hosts: 2, PagesPerHost: 5, LyingLength: tc.on, HangTime: hang})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			host := srv.Hosts()[0] + ":" + strconv.Itoa(srv.Port())
			resp, body, took := rawGet(t, srv, host, tc.path)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.length != -2 && resp.ContentLength != tc.length {
				t.Errorf("Content-Length %d, want %d", resp.ContentLength, tc.length)
			}
			if len(body) > tc.maxLength {
				t.Errorf("received %d body bytes, want at most %d", len(body), tc.maxLength)
			}
			if tc.body != "" && string(body) != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if took < tc.minTime {
				t.Errorf("the connection closed after %s, want at least HangTime %s", took, tc.minTime)
			}
		})
	}
}
