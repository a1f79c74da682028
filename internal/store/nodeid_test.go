package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestNodeIDKeptAndDistinct(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	id1, err := NodeID(a)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9._-]+-[0-9a-f]{6}$`).MatchString(id1) {
		t.Fatalf("generated id %q, want HOST-xxxxxx", id1)
	}
	if err := checkNodeID(id1); err != nil {
		t.Fatalf("generated id %q is not a node id: %v", id1, err)
	}
	host, _ := os.Hostname()
	if want := sanitiseHost(host) + "-"; !strings.HasPrefix(id1, want) {
		t.Fatalf("id %q does not start with the host name %q", id1, want)
	}
	// A restart on the same directory keeps it.
	again, err := NodeID(a)
	if err != nil || again != id1 {
		t.Fatalf("second call: %q, %v; want %q", again, err, id1)
	}
	raw, err := os.ReadFile(filepath.Join(a, NodeIDFile))
	if err != nil || string(raw) != id1+"\n" {
		t.Fatalf("NODE_ID holds %q (%v), want %q", raw, err, id1+"\n")
	}
	// Another directory (another node on this machine) gets another id.
	id2, err := NodeID(b)
	if err != nil {
		t.Fatal(err)
	}
	if id2 == id1 {
		t.Fatalf("two data directories share the id %q", id1)
	}
	// No temporary file is left behind.
	ents, _ := os.ReadDir(a)
	for _, e := range ents {
		if e.Name() != NodeIDFile {
			t.Fatalf("left %s in the data directory", e.Name())
		}
	}
}

func TestNodeIDFileEditedByHand(t *testing.T) {
	tests := []struct {
		name, content, want string
		ok                  bool
	}{
		{"plain", "crawler-7\n", "crawler-7", true},
		{"spaces trimmed", "  n1 \r\n", "n1", true},
		{"empty", "\n", "", false},
		{"space inside", "my node\n", "", false},
		{"brace", "a{b}\n", "", false},
		{"too long", strings.Repeat("x", 129), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, NodeIDFile), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := NodeID(dir)
			if tt.ok && (err != nil || got != tt.want) {
				t.Fatalf("NodeID = %q, %v; want %q", got, err, tt.want)
			}
			if !tt.ok && (err == nil || !strings.Contains(err.Error(), NodeIDFile) || !strings.Contains(err.Error(), "delete it")) {
				t.Fatalf("NodeID = %q, %v; want an error naming %s and what to do", got, err, NodeIDFile)
			}
		})
	}
}

func TestSanitiseHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"web-1.example.org", "web-1.example.org"},
		{"", "node"},
		{"{}", "node"},
		{"my host", "my-host"},
		{"héllo", "h--llo"},
		{strings.Repeat("a", 300), strings.Repeat("a", 100)},
	}
	for _, tt := range tests {
		if got := sanitiseHost(tt.in); got != tt.want {
			t.Errorf("sanitiseHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if err := checkNodeID(sanitiseHost(tt.in) + "-abcdef"); err != nil {
			t.Errorf("sanitiseHost(%q) gives a bad id: %v", tt.in, err)
		}
	}
}

func TestNodeTokenKept(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t1, err := NodeToken(a)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(t1) {
		t.Fatalf("token %q, want 32 hex digits", t1)
	}
	if again, err := NodeToken(a); err != nil || again != t1 {
		t.Fatalf("second call: %q, %v; want %q", again, err, t1)
	}
	if t2, err := NodeToken(b); err != nil || t2 == t1 {
		t.Fatalf("another directory: %q, %v; want a token other than %q", t2, err, t1)
	}
}
