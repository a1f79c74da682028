package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spider-crawler/spider/internal/frontier"
)

// filledState writes a state with pending and completed URLs to a new
// directory and closes it.
func filledState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := fillState(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fillState writes 600 URLs to a new state in dir, 400 of them completed.
func fillState(dir string) error {
	s, err := Open(dir, Options{RecentSize: 64})
	if err != nil {
		return err
	}
	ctx := context.Background()
	var reqs []frontier.Request
	for i := range 600 {
		reqs = append(reqs, frontier.Request{URL: fmt.Sprintf("http://h%d.test/p/%d", i%7, i), Key: fmt.Sprintf("h%d.test", i%7), Depth: 1})
	}
	news, err := s.Discover(ctx, reqs)
	if err != nil {
		s.Close()
		return err
	}
	for i, r := range news[:400] {
		class := "200"
		if i%5 == 0 {
			class = "404"
		}
		if _, err := s.Complete(ctx, r, Outcome{Class: class, Fingerprint: uint64(i + 1), Stored: class == "200"}, nil); err != nil {
			s.Close()
			return err
		}
	}
	return s.Close()
}

func TestInspectAndRebuild(t *testing.T) {
	dir := filledState(t)
	in, err := Inspect(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Problems) != 0 || len(in.Pending) != 200 || len(in.Seen) != 600 || in.Completed() != 400 || in.Counters["404"] != 80 {
		t.Fatalf("inspection: %d problems %v, %d pending, %d seen, %d completed, counters %v",
			len(in.Problems), in.Problems, len(in.Pending), len(in.Seen), in.Completed(), in.Counters)
	}
	// Rebuild with one completed URL queued again and one forgotten.
	spec := RebuildSpec{Created: in.Created, Pending: append([]frontier.Request(nil), in.Pending...), FP: in.FP, PageNext: 7, RecordsEnd: 99}
	spec.Pending = append(spec.Pending, frontier.Request{URL: "http://h1.test/p/1", Key: "h1.test", Depth: 1})
	for i := 2; i < 400; i++ {
		spec.Completed = append(spec.Completed, CompletedURL{URL: fmt.Sprintf("http://h%d.test/p/%d", i%7, i), Depth: 1, Class: "200"})
	}
	out := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Rebuild(filepath.Join(out, DBFile), spec); err != nil {
		t.Fatal(err)
	}
	in2, err := Inspect(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(in2.Problems) != 0 || len(in2.Pending) != 201 || len(in2.Seen) != 599 || in2.Completed() != 398 || in2.PageNext != 7 || in2.RecordsEnd != 99 {
		t.Fatalf("rebuilt: problems %v, %d pending, %d seen, %d completed, marks %d %d",
			in2.Problems, len(in2.Pending), len(in2.Seen), in2.Completed(), in2.PageNext, in2.RecordsEnd)
	}
	s, err := Open(out, Options{})
	if err != nil {
		t.Fatalf("Open of a rebuilt state: %v", err)
	}
	defer s.Close()
	if s.PendingCount() != 201 || s.SeenCount() != 599 {
		t.Errorf("opened: %d pending, %d seen", s.PendingCount(), s.SeenCount())
	}
	// The forgotten URL is accepted again, the others are not.
	news, err := s.Discover(context.Background(), []frontier.Request{
		{URL: "http://h0.test/p/0", Key: "h0.test", Depth: 1}, {URL: "http://h2.test/p/2", Key: "h2.test", Depth: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(news) != 1 || news[0].URL != "http://h0.test/p/0" {
		t.Errorf("Discover after rebuild accepted %v, want only the forgotten http://h0.test/p/0", news)
	}
	if err := Rebuild(filepath.Join(out, DBFile), spec); err == nil {
		t.Error("Rebuild over an existing file succeeded")
	}
}

// TestInspectDamaged flips, zeroes and cuts the state file at many places:
// Inspect returns a result or an error wrapping ErrDamaged, never panics
// or crashes the process.
func TestInspectDamaged(t *testing.T) {
	dir := filledState(t)
	path := filepath.Join(dir, DBFile)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string) {
		t.Helper()
		in, err := Inspect(dir, 0)
		if err != nil && !errors.Is(err, ErrDamaged) {
			t.Errorf("%s: error %v does not wrap ErrDamaged", what, err)
		}
		if err == nil && in == nil {
			t.Errorf("%s: no inspection and no error", what)
		}
	}
	damaged := 0
	for i := 0; i < len(orig); i += len(orig)/150 + 1 {
		for _, mask := range []byte{0x01, 0xff} {
			b := append([]byte(nil), orig...)
			b[i] ^= mask
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("byte %d ^ %#x", i, mask))
			if _, err := Inspect(dir, 0); err != nil {
				damaged++
			}
		}
	}
	for _, n := range []int{0, 1, 4096, len(orig) / 2} { // bbolt grows the file ahead: its tail may be free
		if err := os.WriteFile(path, orig[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Inspect(dir, 0); !errors.Is(err, ErrDamaged) {
			t.Errorf("cut to %d bytes: %v, want ErrDamaged", n, err)
		}
	}
	t.Logf("%d of the flips were reported as damage", damaged)
}

func TestCheckFile(t *testing.T) {
	dir := filledState(t)
	if err := CheckFile(dir); err != nil {
		t.Fatalf("intact state: %v", err)
	}
	path := filepath.Join(dir, DBFile)
	orig, _ := os.ReadFile(path)
	for _, n := range []int{0, 100, 4096, 2 * 4096} {
		os.WriteFile(path, orig[:n], 0o600)
		if err := CheckFile(dir); !errors.Is(err, ErrDamaged) {
			t.Errorf("cut to %d bytes: %v, want ErrDamaged", n, err)
		}
	}
	os.Remove(path)
	if err := CheckFile(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
