package main

import (
	"os"
	"testing"
)

// TestMain removes the spider binary buildSpider built, after every test.
func TestMain(m *testing.M) {
	code := m.Run()
	if spiderBin.dir != "" {
		os.RemoveAll(spiderBin.dir)
	}
	os.Exit(code)
}
