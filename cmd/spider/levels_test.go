package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDepthLevelFlags: spider crawl and spider master let depth levels
// overlap by default (the relinking crawl, crawl.Config.DepthOverlaps);
// --strict-levels or strict_levels in the --config file restores level by
// level; --loose-depth and loose_depth (old command lines and files) are
// accepted and change nothing.
func TestDepthLevelFlags(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	strictFile := file("strict.yaml", "strict_levels: true\n")
	looseFile := file("loose.yaml", "loose_depth: true\n")
	for _, tc := range []struct {
		name       string
		args       []string
		wantStrict bool
	}{
		{"default", nil, false},
		{"--loose-depth", []string{"--loose-depth"}, false},
		{"--strict-levels", []string{"--strict-levels"}, true},
		{"strict_levels in the file", []string{"--config", strictFile}, true},
		{"a flag overrides the file", []string{"--config", strictFile, "--strict-levels=false"}, false},
		{"loose_depth in an old file", []string{"--config", looseFile}, false},
	} {
		for _, cmd := range []string{"crawl", "master"} {
			t.Run(cmd+" "+tc.name, func(t *testing.T) {
				args := append(append([]string{}, tc.args...), "http://a.test/")
				cfg, fs, err := crawlConfigFlags(cmd, "", args, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				if err := fs.Parse(args); err != nil {
					t.Fatal(err)
				}
				if err := checkConfig(cfg); err != nil {
					t.Fatalf("checkConfig: %v", err)
				}
				if cfg.StrictLevels != tc.wantStrict || cfg.DepthOverlaps() == tc.wantStrict {
					t.Errorf("StrictLevels %v, levels overlap %v; want StrictLevels %v", cfg.StrictLevels, cfg.DepthOverlaps(), tc.wantStrict)
				}
			})
		}
	}
}

// TestDepthLevelFlagsContradict: --loose-depth (or loose_depth in the
// file) beside --strict-levels is a usage error, exit 2, with a message
// naming both flags, before anything is opened.
func TestDepthLevelFlagsContradict(t *testing.T) {
	looseFile := filepath.Join(t.TempDir(), "loose.yaml")
	if err := os.WriteFile(looseFile, []byte("loose_depth: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"crawl", "--data", t.TempDir(), "--loose-depth", "--strict-levels", "http://a.test/"},
		{"crawl", "--data", t.TempDir(), "--config", looseFile, "--strict-levels", "http://a.test/"},
		{"master", "--redis", "redis://127.0.0.1:1/0", "--loose-depth", "--strict-levels", "http://a.test/"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "--loose-depth and --strict-levels contradict each other") {
			t.Errorf("%v: exit %d, want 2; stderr %q", args, code, errOut)
		}
	}
}
