package cluster

import (
	"errors"
	"strings"
	"testing"
)

func TestNewKeys(t *testing.T) {
	tests := []struct {
		crawl string
		ok    bool
	}{
		{"c", true},
		{"crawl-1_x.y", true},
		{strings.Repeat("a", MaxNameLen), true},
		{"", false},
		{strings.Repeat("a", MaxNameLen+1), false},
		{"a:b", false},
		{"a{b}", false},
		{"a b", false},
		{"é", false},
	}
	for _, tc := range tests {
		k, err := NewKeys(tc.crawl)
		if (err == nil) != tc.ok {
			t.Errorf("NewKeys(%q) err = %v, want ok=%v", tc.crawl, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrBadName) {
			t.Errorf("NewKeys(%q) err = %v, want ErrBadName", tc.crawl, err)
		}
		if err == nil && k.Crawl() != tc.crawl {
			t.Errorf("Crawl() = %q, want %q", k.Crawl(), tc.crawl)
		}
	}
}

func TestKeyScheme(t *testing.T) {
	k, err := NewKeys("web")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ got, want string }{
		{k.Prefix(), "spider:web:"},
		{k.Members(), "spider:web:{web.m}:members"},
		{k.Info(), "spider:web:{web.m}:info"},
		{k.Epoch(), "spider:web:{web.m}:epoch"},
		{k.Events(), "spider:web:{web.m}:events"},
		{k.Owner(17), "spider:web:{b17}:owner"},
		{k.Fence(17), "spider:web:{b17}:fence"},
		{k.Bucket(17, "pending"), "spider:web:{b17}:pending"},
		{BucketTag(4095), "{b4095}"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("key %q, want %q", tc.got, tc.want)
		}
		if !strings.HasPrefix(tc.got, "spider:web:") && !strings.HasPrefix(tc.got, "{b") {
			t.Errorf("key %q lacks the crawl prefix", tc.got)
		}
	}
}

func TestCheckNodeID(t *testing.T) {
	for _, id := range []string{"a", "node-1", "10.0.0.1:8080", "x#y", strings.Repeat("n", MaxNameLen)} {
		if err := CheckNodeID(id); err != nil {
			t.Errorf("CheckNodeID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range []string{"", "a b", "a{b", "b}", "tab\t", "é", strings.Repeat("n", MaxNameLen+1)} {
		if err := CheckNodeID(id); !errors.Is(err, ErrBadName) {
			t.Errorf("CheckNodeID(%q) = %v, want ErrBadName", id, err)
		}
	}
}

func TestParseOwnerValue(t *testing.T) {
	tests := []struct {
		v     string
		node  string
		token int64
		ok    bool
	}{
		{"n1:5", "n1", 5, true},
		{"10.0.0.1:80:1712345678901234", "10.0.0.1:80", 1712345678901234, true},
		{"n1", "", 0, false},
		{":5", "", 0, false},
		{"n1:", "", 0, false},
		{"n1:0", "", 0, false},
		{"n1:-3", "", 0, false},
		{"n1:+3", "", 0, false},
		{"n1:007", "", 0, false},
		{"n1:9223372036854775808", "", 0, false},
	}
	for _, tc := range tests {
		node, token, err := ParseOwnerValue(tc.v)
		if (err == nil) != tc.ok || node != tc.node || token != tc.token {
			t.Errorf("ParseOwnerValue(%q) = %q, %d, %v; want %q, %d, ok=%v", tc.v, node, token, err, tc.node, tc.token, tc.ok)
		}
	}
}

func FuzzParseOwnerValue(f *testing.F) {
	for _, s := range []string{"n1:5", "a:b:1", "", ":", "x:0", "x:-1", "x:99999999999999999999", "ü:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		node, token, err := ParseOwnerValue(v)
		if err != nil {
			return
		}
		if node == "" || token <= 0 {
			t.Fatalf("ParseOwnerValue(%q) = %q, %d without error", v, node, token)
		}
		if OwnerValue(node, token) != v {
			t.Fatalf("round trip of %q gives %q", v, OwnerValue(node, token))
		}
	})
}
