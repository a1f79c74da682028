package crawl

import (
	"encoding/json"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestValidateRanges: every numeric or textual setting refuses each bad
// value with one line naming its flag and the valid range, and accepts
// the edges of that range.
func TestValidateRanges(t *testing.T) {
	tests := []struct {
		flag string
		set  func(*Config)
		ok   bool
	}{
		{"--max-depth", func(c *Config) { c.MaxDepth = -2 }, false},
		{"--max-depth", func(c *Config) { c.MaxDepth = MaxMaxDepth + 1 }, false},
		{"--max-depth", func(c *Config) { c.MaxDepth = -1 }, true},
		{"--max-depth", func(c *Config) { c.MaxDepth = MaxMaxDepth }, true},
		{"--max-pages", func(c *Config) { c.MaxPages = -1 }, false},
		{"--concurrency", func(c *Config) { c.Concurrency = 0 }, false},
		{"--concurrency", func(c *Config) { c.Concurrency = -3 }, false},
		{"--concurrency", func(c *Config) { c.Concurrency = MaxConcurrency + 1 }, false},
		{"--per-host", func(c *Config) { c.PerHost = 0 }, false},
		{"--per-host", func(c *Config) { c.PerHost = MaxPerHost + 1 }, false},
		{"--delay", func(c *Config) { c.Delay = -1 }, false},
		{"--delay", func(c *Config) { c.Delay = MaxDelay + 1 }, false},
		{"--delay", func(c *Config) { c.Delay = 0 }, true},
		{"--max-crawl-delay", func(c *Config) { c.MaxCrawlDelay = Duration(-time.Second) }, false},
		{"--max-crawl-delay", func(c *Config) { c.MaxCrawlDelay = Duration(2 * time.Hour) }, false},
		{"--retry-delay", func(c *Config) { c.RetryDelay = Duration(-time.Second) }, false},
		{"--retry-delay", func(c *Config) { c.RetryDelay = 0 }, false},
		{"--retry-delay", func(c *Config) { c.RetryDelay = MaxDelay + 1 }, false},
		{"--connect-timeout", func(c *Config) { c.ConnectTimeout = 0 }, false},
		{"--connect-timeout", func(c *Config) { c.ConnectTimeout = -1 }, false},
		{"--first-byte-timeout", func(c *Config) { c.FirstByteTimeout = -1 }, false},
		{"--timeout", func(c *Config) { c.Timeout = 0 }, false},
		{"--timeout", func(c *Config) { c.Timeout = MaxTimeout + 1 }, false},
		{"--delay-from", func(c *Config) { c.DelayFrom = "later" }, false},
		{"--user-agent", func(c *Config) { c.UserAgent = "spider/1\r\nX-Evil: 1" }, false},
		{"--user-agent", func(c *Config) { c.UserAgent = "spider/1\n" }, false},
		{"--user-agent", func(c *Config) { c.UserAgent = "spider\x00/1" }, false},
		{"--user-agent", func(c *Config) { c.UserAgent = "" }, false},
		{"--robots-agent", func(c *Config) { c.RobotsAgent = "spider\r" }, false},
		{"--max-redirects", func(c *Config) { c.MaxRedirects = -1 }, false},
		{"--max-redirects", func(c *Config) { c.MaxRedirects = 51 }, false},
		{"--max-retries", func(c *Config) { c.MaxRetries = -1 }, false},
		{"--max-retries", func(c *Config) { c.MaxRetries = 21 }, false},
		{"--seen", func(c *Config) { c.Seen = "maybe" }, false},
		{"--fp-rate", func(c *Config) { c.FPRate = 0 }, false},
		{"--fp-rate", func(c *Config) { c.FPRate = 1 }, false},
		{"--fp-rate", func(c *Config) { c.FPRate = -0.1 }, false},
		{"--fp-rate", func(c *Config) { c.FPRate = math.NaN() }, false},
		{"--fp-rate", func(c *Config) { c.FPRate = 0.5 }, true},
		{"--expected-urls", func(c *Config) { c.ExpectedURLs = 0 }, false},
		{"--expected-urls", func(c *Config) { c.ExpectedURLs = 1e15 }, false},
		{"--expected-urls", func(c *Config) { c.ExpectedURLs = math.MaxUint64 }, false},
		{"--expected-urls", func(c *Config) { c.ExpectedURLs = 1e9 }, true},
		{"--max-rate", func(c *Config) { c.MaxRate = -1 }, false},
		{"--max-rate", func(c *Config) { c.MaxRate = math.NaN() }, false},
		{"--max-rate", func(c *Config) { c.MaxRate = HardMaxRate + 1 }, false},
		{"--memory-budget", func(c *Config) { c.MemoryBudget = 999 }, false},
		{"--memory-budget", func(c *Config) { c.MemoryBudget = MaxMemoryBudget + 1 }, false},
		{"--max-body-bytes", func(c *Config) { c.MaxBodyBytes = 0 }, false},
		{"--max-body-bytes", func(c *Config) { c.MaxBodyBytes = -1 }, false},
		{"--max-body-bytes", func(c *Config) { c.MaxBodyBytes = MaxBodyLimit + 1 }, false},
		{"--max-body-bytes", func(c *Config) { c.MaxBodyBytes = MaxBodyLimit }, true},
		{"--scope", func(c *Config) { c.Scope = "planet" }, false},
		{"--scope-regexp", func(c *Config) { c.Scope, c.ScopeRegexp = "regexp", "(" }, false},
		{"--topics", func(c *Config) { c.Topics = "/nonexistent/topics.yaml" }, false},
		{"--revisit", func(c *Config) { c.Revisit = "sometimes" }, false},
		{"--revisit", func(c *Config) { c.Revisit = RevisitAdaptive }, true},
		{"--revisit-min", func(c *Config) { c.RevisitMin = MinRevisit - 1 }, false},
		{"--revisit-min", func(c *Config) { c.RevisitMin = -1 }, false},
		{"--revisit-min", func(c *Config) { c.RevisitMin = MinRevisit }, true},
		{"--revisit-max", func(c *Config) { c.RevisitMax = MaxRevisit + 1 }, false},
		{"--revisit-max", func(c *Config) { c.RevisitMax = MaxRevisit }, true},
		{"--revisit-max", func(c *Config) { c.RevisitMin, c.RevisitMax = Duration(2*time.Hour), Duration(time.Hour) }, false},
		{"--revisit-initial", func(c *Config) { c.RevisitInitial = 0 }, false},
		{"--revisit-share", func(c *Config) { c.RevisitShare = 0 }, false},
		{"--revisit-share", func(c *Config) { c.RevisitShare = 1.01 }, false},
		{"--revisit-share", func(c *Config) { c.RevisitShare = math.NaN() }, false},
		{"--revisit-share", func(c *Config) { c.RevisitShare = 1 }, true},
		{"revisit_hosts", func(c *Config) {
			c.RevisitHosts = map[string]RevisitBounds{"a.test": {Min: Duration(time.Hour), Max: Duration(time.Minute)}}
		}, false},
		{"revisit_hosts", func(c *Config) { c.RevisitHosts = map[string]RevisitBounds{"a.test": {Min: 1}} }, false},
		{"revisit_topics", func(c *Config) { c.RevisitTopics = map[string]RevisitBounds{"news": {Max: MaxRevisit + 1}} }, false},
		{"revisit_topics", func(c *Config) { c.RevisitTopics = map[string]RevisitBounds{"news": {Min: Duration(time.Minute)}} }, true},
	}
	base := NewConfig()
	if err := base.Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	for _, tt := range tests {
		c := NewConfig()
		tt.set(&c)
		err := c.Validate()
		if tt.ok {
			if err != nil {
				t.Errorf("%s: a value in range refused: %v", tt.flag, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: a bad value (%+v) accepted", tt.flag, c)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, strings.TrimPrefix(tt.flag, "--")) && !strings.Contains(msg, strings.TrimSuffix(strings.TrimPrefix(tt.flag, "revisit_"), "s")) {
			t.Errorf("%s: error %q is not one line naming the flag", tt.flag, msg)
		}
		if strings.Contains(tt.flag, "agent") || tt.flag == "--delay-from" || tt.flag == "--seen" || strings.HasPrefix(tt.flag, "--scope") || tt.flag == "--topics" {
			continue
		}
		if !strings.Contains(msg, "use ") {
			t.Errorf("%s: error %q does not give the valid range", tt.flag, msg)
		}
	}
}

func TestValidateBloomMemory(t *testing.T) {
	c := NewConfig()
	c.ExpectedURLs = 1e15
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "3 PiB") || !strings.Contains(err.Error(), "--fp-rate") {
		t.Fatalf("error %v does not give the memory needed", err)
	}
}

// TestLocalFieldsAreLocal: the published rules carry no local-only key,
// decoding drops every local-only key an older or hostile writer put in,
// and SetLocal covers exactly LocalFields (a new local field must be
// added to all three).
func TestLocalFieldsAreLocal(t *testing.T) {
	c := NewConfig()
	c.Data, c.Topics = "/srv/data", "/etc/topics.yaml"
	c.AllowPrivate, c.Resolve, c.ResolveFile = true, []string{"a.test:80:127.0.0.1"}, "/etc/resolve"
	c.Concurrency, c.MemoryBudget, c.MaxBodyBytes = 7, 5000, 4096
	c.ConnectTimeout, c.FirstByteTimeout, c.Timeout = Duration(time.Second), Duration(2*time.Second), Duration(3*time.Second)
	c.UserAgent, c.MaxDepth, c.Scope = "rules/1", 3, "any"

	b, err := c.RulesJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range LocalFields {
		if _, ok := m[k]; ok {
			t.Errorf("RulesJSON publishes local-only %s", k)
		}
	}
	rules, ignored, err := RulesFromJSON(b)
	if err != nil || len(ignored) != 0 {
		t.Fatalf("RulesFromJSON(RulesJSON) = %v, ignored %v", err, ignored)
	}
	if rules.UserAgent != "rules/1" || rules.MaxDepth != 3 || rules.Scope != "any" {
		t.Errorf("crawl rules lost: %+v", rules)
	}
	if !rules.DepthOverlaps() || !c.DepthOverlaps() {
		t.Errorf("a topics crawl's overlapping levels did not travel: published %v, local %v", rules.DepthOverlaps(), c.DepthOverlaps())
	}

	full, _ := json.Marshal(c) // what an older master publishes
	rules, ignored, err = RulesFromJSON(full)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ignored)
	want := slices.Clone(LocalFields)
	slices.Sort(want)
	if !slices.Equal(ignored, want) {
		t.Errorf("ignored %v, want %v", ignored, want)
	}
	if rules.AllowPrivate || rules.ResolveFile != "" || rules.Resolve != nil || rules.Data != "" {
		t.Errorf("local-only settings taken from the published form: %+v", rules)
	}

	// SetLocal copies exactly the LocalFields: compare field by field.
	var dst Config
	dst.SetLocal(c)
	cv, dv := reflect.ValueOf(c), reflect.ValueOf(dst)
	for i := range cv.NumField() {
		name := cv.Type().Field(i).Name
		copied := reflect.DeepEqual(cv.Field(i).Interface(), dv.Field(i).Interface()) && !dv.Field(i).IsZero()
		if copied != slices.Contains(LocalFields, name) {
			t.Errorf("field %s: copied by SetLocal %v, in LocalFields %v", name, copied, !copied)
		}
	}
}

// TestRevisitBoundsFromFile: the config file's revisit keys bind to the
// policy: per-host bounds win over the topic's, field by field, and the
// flags' bounds hold elsewhere. It fails if a key is not read or the
// policy ignores it.
func TestRevisitBoundsFromFile(t *testing.T) {
	path := t.TempDir() + "/spider.yaml"
	yaml := "revisit: adaptive\nrevisit_min: 30m\nrevisit_max: 48h\nrevisit_initial: 6h\n" +
		"revisit_hosts:\n  news.test: {min: 5m, max: 2h}\n  slow.test: {min: 24h}\n" +
		"revisit_topics:\n  prices: {max: 1h}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewConfig()
	if err := LoadFile(path, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := c.RevisitPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode.String() != "adaptive" || p.Initial != 6*time.Hour {
		t.Fatalf("policy %+v", p)
	}
	for _, tc := range []struct {
		host, topic string
		lo, hi      time.Duration
	}{
		{"news.test", "", 5 * time.Minute, 2 * time.Hour},
		{"news.test", "prices", 5 * time.Minute, 2 * time.Hour}, // the host's bounds win
		{"slow.test", "", 24 * time.Hour, 48 * time.Hour},       // min from the host, max from the flags
		{"other.test", "prices", 30 * time.Minute, time.Hour},
		{"other.test", "", 30 * time.Minute, 48 * time.Hour},
	} {
		lo, hi := p.Bounds(tc.host, tc.topic)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("bounds of %s/%s = [%s, %s], want [%s, %s]", tc.host, tc.topic, lo, hi, tc.lo, tc.hi)
		}
	}
}
