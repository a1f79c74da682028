package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

func TestUsageAndErrors(t *testing.T) {
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{nil, 2, "usage: websim"},
		{[]string{"help"}, 0, "commands:"},
		{[]string{"dance"}, 2, "unknown command"},
		{[]string{"serve", "--addr", "0.0.0.0:0"}, 1, "not loopback"},
		{[]string{"serve", "--profile", "mean"}, 1, "profile"},
		{[]string{"serve", "--help"}, 0, "-gzip-bomb"},
		{[]string{"truth", "--scope", "planet"}, 1, "scope"},
		{[]string{"truth", "--enable", "nonsense"}, 2, "unknown feature"},
		{[]string{"serve", "extra"}, 1, "flags only"},
		{[]string{"changes", "--change-day", "10s"}, 0, "Cho & Garcia-Molina"},
		{[]string{"changes", "--validator-faults", "nonsense"}, 2, "validator fault"},
		{[]string{"serve", "--sitemap-max-urls", "60000"}, 1, "sitemap file"},
	}
	for _, tc := range cases {
		var out, errb bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.out) {
			t.Errorf("websim %v: exit %d, output %q; want %d containing %q", tc.args, code, out.String()+errb.String(), tc.code, tc.out)
		}
	}
}

func TestTruthCommand(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"truth", "--seed", "3", "--hosts", "6", "--pages", "20", "--profile", "hostile", "--hang=false",
		"--port", "8080", "--max-depth", "2", "--scope", "domain"}
	if code := run(t.Context(), args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var truth websim.Truth
	if err := json.Unmarshal(out.Bytes(), &truth); err != nil {
		t.Fatal(err)
	}
	if len(truth.MustFetch) < 10 || truth.Rules.Scope != "domain" || truth.Rules.MaxDepth != 2 {
		t.Fatalf("truth: %d URLs, rules %+v", len(truth.MustFetch), truth.Rules)
	}
	for u, f := range truth.Final {
		if !strings.HasPrefix(u, "http://www.d0.test:8080/") && !strings.Contains(u, ".d0.test:8080/") && !strings.HasPrefix(u, "http://d0.test:8080/") {
			t.Errorf("out-of-domain URL %s", u)
		}
		if f == websim.FinalTimeout {
			t.Errorf("hang disabled but %s times out", u)
		}
	}
	// The same flags give the same output.
	var again bytes.Buffer
	run(t.Context(), args, &again, io.Discard)
	if !bytes.Equal(out.Bytes(), again.Bytes()) {
		t.Error("truth output is not deterministic")
	}
}

func TestServeCommand(t *testing.T) {
	dir := t.TempDir()
	resolve := filepath.Join(dir, "resolve.txt")
	logFile := filepath.Join(dir, "access.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	var out syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--hosts", "5", "--resolve-file", resolve, "--access-log", logFile, "--seed-count", "2"}, &out, io.Discard)
	}()
	var entries []string
	// Poll (every 20 ms) for the resolve file and the seeds; the check below fails the
	// test when they never appear.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(resolve)
		if entries = strings.Fields(string(b)); len(entries) == 5 && strings.Count(out.String(), "http://") == 2 {
			break
		}
	}
	if len(entries) != 5 {
		cancel()
		t.Fatalf("resolve file: %v", entries)
	}
	host, port, addr, err := websim.ParseResolve(entries[0])
	if err != nil || host != "www.d0.test" {
		t.Fatalf("entry %q: %v", entries[0], err)
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(addr.String(), itoa(port)))
	}}}
	seed := strings.Fields(out.String())[0]
	resp, err := client.Get(seed)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v", seed, err)
	}
	resp.Body.Close()
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d", code)
	}
	b, _ := os.ReadFile(logFile)
	var e websim.Entry
	if err := json.Unmarshal(bytes.TrimSpace(b), &e); err != nil || e.URL != seed || e.Status != 200 {
		t.Fatalf("access log %q: %v", b, err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
