package main

import "testing"

// TestCrawlGCPercent: spider crawl collects at GOGC=200 unless the
// environment sets GOGC, which then stands as Go reads it.
func TestCrawlGCPercent(t *testing.T) {
	for _, tc := range []struct {
		env     string
		percent int
		ok      bool
	}{
		{"", 200, true},
		{"100", 0, false},
		{"off", 0, false},
		{"400", 0, false},
	} {
		p, ok := crawlGCPercent(tc.env)
		if p != tc.percent || ok != tc.ok {
			t.Errorf("crawlGCPercent(%q) = %d, %v; want %d, %v", tc.env, p, ok, tc.percent, tc.ok)
		}
	}
}
