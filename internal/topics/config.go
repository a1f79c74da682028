package topics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/spider-crawler/spider/internal/urls"
)

// Duration is a time.Duration written in YAML as a Go duration ("500ms").
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("cannot read duration (line %d): %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("cannot read duration %q (line %d): use forms like 500ms, 2s, 1m: %w", s, n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Config is a topics file: the crawl's topics and the scheduler's knobs.
// Every field documents its default; Load applies them.
type Config struct {
	// Period is the daemon's accounting period: each topic should fetch
	// MinPages relevant pages per period. Default 1m.
	Period Duration `yaml:"period"`
	// Tick is how often the daemon adjusts slices, saves the task records
	// and writes the status file. Default Period/12 (at least 100ms).
	Tick Duration `yaml:"tick"`
	// BaseSlice is the crawl-time threshold (slice total ST) of priority 0;
	// a topic of priority p gets BaseSlice×(p+1) unless Slices sets its
	// level. Crawl time is the sum of a task's fetch durations. Default 1s.
	BaseSlice Duration `yaml:"base_slice"`
	// Slices sets the threshold of a priority level (SPEC §4: each level
	// has its own), e.g. {2: 3s}.
	Slices map[int]Duration `yaml:"slices"`
	// MinSlice is the smallest slice the daemon shrinks a topic to.
	// Default BaseSlice/8.
	MinSlice Duration `yaml:"min_slice"`
	// Quantum is the daemon's step when it shrinks or grows a slice.
	// Default BaseSlice/4.
	Quantum Duration `yaml:"quantum"`
	// Relevance is the share of a page's text (in characters) made of a
	// topic's terms from which the page counts as relevant. Default 0.05.
	Relevance float64 `yaml:"relevance"`
	// Mode is "pq" (default): the PQ-MCSA scheduler chooses what to crawl;
	// or "fifo": the traditional order (the URL whose host has waited
	// longest, as without topics), with the same per-topic accounting — the
	// baseline of the SPEC §4 experiment.
	Mode string `yaml:"mode"`
	// OtherPriority is the priority of the background task that crawls
	// URLs matching no topic. Default 0 (the lowest level).
	OtherPriority int `yaml:"other_priority"`
	// Topics are the crawl's topics, at least one.
	Topics []Topic `yaml:"topics"`
}

// Topic is one crawl topic (a task of topic granularity).
type Topic struct {
	// Name identifies the topic (letters, digits, "-", "_", "."; at most
	// 64 bytes); it tags the topic's URLs in the frontier.
	Name string `yaml:"name"`
	// Description is free text shown by spider stats.
	Description string `yaml:"description"`
	// Priority is the topic's level, 0 (lowest) to MaxPriority: a higher
	// level pre-empts a lower one.
	Priority int `yaml:"priority"`
	// Seeds are start URLs; they are crawled (added to the crawl's seeds)
	// and belong to this topic.
	Seeds []string `yaml:"seeds"`
	// Patterns are SURT prefixes of the topic's URLs, e.g.
	// "http://(test,d0," for d0.test and its subdomains on any port. The
	// longest matching prefix over all topics wins. Without patterns a
	// topic covers its seeds' hosts ("http://(test,d0,www,").
	Patterns []string `yaml:"patterns"`
	// URLs are single URLs with their own priority (tasks of URL
	// granularity, SPEC §4 G = false), charged to this topic.
	URLs []URLTask `yaml:"urls"`
	// Terms are the words whose share of a page's text measures the page's
	// relevance to the topic (case-insensitive substrings).
	Terms []string `yaml:"terms"`
	// MinPages is the number of relevant pages the topic should reach per
	// Period; the daemon shrinks the slice of a topic that reached it and
	// grows the slice of one that did not. Default 1.
	MinPages int `yaml:"min_pages"`
	// Recrawl makes the topic time-critical: its hub pages are fetched
	// again every Recrawl (even though already seen) to find new pages.
	// 0 (default) never revisits.
	Recrawl Duration `yaml:"recrawl"`
	// Hubs are the pages revisited with Recrawl. Default: Seeds.
	Hubs []string `yaml:"hubs"`
}

// URLTask is a single URL with its own priority.
type URLTask struct {
	URL      string `yaml:"url"`
	Priority int    `yaml:"priority"`
}

// Scheduling modes of Config.Mode.
const (
	ModePQ   = "pq"
	ModeFIFO = "fifo"
)

// MaxPriority is the highest priority level.
const MaxPriority = 9

// MaxTopics bounds the topics of one file.
const MaxTopics = 256

// ErrConfig is wrapped by every error about a topics file's content.
var ErrConfig = errors.New("bad topics file")

// Load reads and validates a topics file (unknown keys are errors) and
// applies the defaults.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read topics file: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("cannot use topics file %s: %w", path, err)
	}
	return c, nil
}

// Parse decodes and validates a topics file's bytes and applies the
// defaults. It reports every problem at once, each wrapping ErrConfig.
func Parse(b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: cannot parse YAML: %w", ErrConfig, err)
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaults() {
	if c.Period == 0 {
		c.Period = Duration(time.Minute)
	}
	if c.Tick == 0 {
		c.Tick = max(c.Period/12, Duration(100*time.Millisecond))
	}
	if c.BaseSlice == 0 {
		c.BaseSlice = Duration(time.Second)
	}
	if c.MinSlice == 0 {
		c.MinSlice = c.BaseSlice / 8
	}
	if c.Quantum == 0 {
		c.Quantum = c.BaseSlice / 4
	}
	if c.Mode == "" {
		c.Mode = ModePQ
	}
	if c.Relevance == 0 {
		c.Relevance = 0.05
	}
	for i := range c.Topics {
		t := &c.Topics[i]
		if t.MinPages == 0 {
			t.MinPages = 1
		}
		if len(t.Hubs) == 0 {
			t.Hubs = t.Seeds
		}
	}
}

// LevelSlice returns the slice total (crawl-time threshold) of priority p.
func (c *Config) LevelSlice(p int) time.Duration {
	if d, ok := c.Slices[p]; ok {
		return time.Duration(d)
	}
	return time.Duration(c.BaseSlice) * time.Duration(p+1)
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func (c *Config) validate() error {
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...)))
	}
	if len(c.Topics) == 0 {
		bad("no topics: list at least one under topics:")
	}
	if len(c.Topics) > MaxTopics {
		bad("%d topics: at most %d", len(c.Topics), MaxTopics)
	}
	if c.Period <= 0 || c.Tick <= 0 || c.BaseSlice <= 0 || c.MinSlice <= 0 || c.Quantum <= 0 {
		bad("period, tick, base_slice, min_slice and quantum must be positive")
	}
	if c.Tick > c.Period {
		bad("tick %s is longer than period %s: use a tick of at most the period", time.Duration(c.Tick), time.Duration(c.Period))
	}
	if c.Mode != ModePQ && c.Mode != ModeFIFO {
		bad("mode %q: use pq (priority-queue scheduling) or fifo (the traditional baseline)", c.Mode)
	}
	if c.Relevance <= 0 || c.Relevance > 1 {
		bad("relevance %g out of range: use a share in (0, 1], e.g. 0.05", c.Relevance)
	}
	for p, d := range c.Slices {
		if p < 0 || p > MaxPriority || d <= 0 {
			bad("slices: level %d: %s; use levels 0..%d with positive durations", p, time.Duration(d), MaxPriority)
		}
	}
	if c.OtherPriority < 0 || c.OtherPriority > MaxPriority {
		bad("other_priority %d out of range 0..%d", c.OtherPriority, MaxPriority)
	}
	names := map[string]bool{}
	for i, t := range c.Topics {
		where := fmt.Sprintf("topic %d (%q)", i+1, t.Name)
		if !validName(t.Name) {
			bad("%s: name must be 1-64 letters, digits, '-', '_' or '.'", where)
		}
		if names[t.Name] {
			bad("%s: name used twice", where)
		}
		names[t.Name] = true
		if t.Priority < 0 || t.Priority > MaxPriority {
			bad("%s: priority %d out of range 0..%d", where, t.Priority, MaxPriority)
		}
		if len(t.Seeds) == 0 && len(t.Patterns) == 0 && len(t.URLs) == 0 {
			bad("%s: give seeds, patterns or urls, or the topic can never match a URL", where)
		}
		for _, p := range t.Patterns {
			if _, err := NormalizePattern(p); err != nil {
				bad("%s: %v", where, err)
			}
		}
		for _, s := range append(append([]string(nil), t.Seeds...), t.Hubs...) {
			if _, err := absURL(s); err != nil {
				bad("%s: %v", where, err)
			}
		}
		for _, u := range t.URLs {
			if _, err := absURL(u.URL); err != nil {
				bad("%s: %v", where, err)
			}
			if u.Priority < 0 || u.Priority > MaxPriority {
				bad("%s: url %s: priority %d out of range 0..%d", where, u.URL, u.Priority, MaxPriority)
			}
		}
		if len(t.Terms) == 0 {
			bad("%s: no terms: list the words that make a page relevant", where)
		}
		for _, term := range t.Terms {
			if strings.TrimSpace(term) == "" {
				bad("%s: empty term", where)
			}
		}
		if t.MinPages < 0 {
			bad("%s: min_pages %d is negative", where, t.MinPages)
		}
		if t.Recrawl < 0 || t.Recrawl > 0 && time.Duration(t.Recrawl) < 100*time.Millisecond {
			bad("%s: recrawl %s: use 0 (never) or at least 100ms", where, time.Duration(t.Recrawl))
		}
	}
	return errors.Join(errs...)
}

func absURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return u, nil
}

// NormalizePattern checks a SURT prefix and lower-cases its scheme and
// host part: it must look like "http://(tld,domain," (a prefix of a SURT
// as urls.SURT writes it).
func NormalizePattern(p string) (string, error) {
	i := strings.Index(p, "://(")
	if i <= 0 {
		return "", fmt.Errorf("pattern %q is not in SURT form: write e.g. http://(com,example, for example.com and its subdomains", p)
	}
	scheme := strings.ToLower(p[:i])
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("pattern %q: scheme must be http or https", p)
	}
	rest := p[i+4:]
	if j := strings.IndexByte(rest, ')'); j >= 0 {
		return scheme + "://(" + strings.ToLower(rest[:j]) + rest[j:], nil
	}
	return scheme + "://(" + strings.ToLower(rest), nil
}

// hostPattern is the SURT prefix of u's host on any port:
// "http://(test,d0,www,".
func hostPattern(u *url.URL) string {
	s := urls.SURT(&url.URL{Scheme: u.Scheme, Host: u.Hostname(), Path: "/"})
	return strings.TrimSuffix(s, ")/")
}
