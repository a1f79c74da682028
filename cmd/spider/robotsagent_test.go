package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestRobotsAgentFollowsUserAgent: the robots.txt product token is derived
// from the final user agent (flag over file), unless robots_agent is given.
// It used to stay "spider" whatever --user-agent said.
func TestRobotsAgentFollowsUserAgent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "spider.yaml")
	if err := os.WriteFile(file, []byte("user_agent: filebot/2.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileRA := filepath.Join(t.TempDir(), "ra.yaml")
	if err := os.WriteFile(fileRA, []byte("user_agent: filebot/2.0\nrobots_agent: pinned\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"default", nil, "spider"},
		{"flag", []string{"--user-agent", "mybot/1.0 (+https://example.org/bot)"}, "mybot"},
		{"file", []string{"--config", file}, "filebot"},
		{"flag over file", []string{"--config", file, "--user-agent", "flagbot/1"}, "flagbot"},
		{"robots_agent in file", []string{"--config", fileRA, "--user-agent", "flagbot/1"}, "pinned"},
		{"robots-agent flag", []string{"--user-agent", "mybot/1", "--robots-agent", "other"}, "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, fs, err := crawlConfigFlags("crawl", "", tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg.Defaults()
			if cfg.RobotsAgent != tc.want {
				t.Errorf("robots agent %q, want %q", cfg.RobotsAgent, tc.want)
			}
		})
	}
}
