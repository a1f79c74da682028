package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults of Config.
const (
	DefaultBatch         = 256
	DefaultFlush         = 200 * time.Millisecond
	DefaultAnswerTimeout = 2 * time.Second
	DefaultRemoteTimeout = 5 * time.Second
	DefaultHeartbeat     = time.Second
	DefaultMemberTTL     = 5 * time.Second
	DefaultStable        = time.Second
	DefaultRedisTimeout  = 30 * time.Second
)

// Duration is a time.Duration written as "500ms" or "2s" in YAML.
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration such as 500ms or 2s", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration: use e.g. 500ms or 2s", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Config describes the whole system: the crawl's name, the protocol's tuning and the
// networks with their centers and hosts. Every process of the system reads the same
// file (Fingerprint is compared at join); a process's own identity comes from its flags.
// The zero value of every tuning field means its default.
type Config struct {
	// Crawl names the crawl; every Redis key starts with "spider:proto:CRAWL:".
	// Default "default".
	Crawl string `yaml:"crawl"`
	// Batch is the number of URLs per frame (the document's "fixed batch size").
	// Default DefaultBatch.
	Batch int `yaml:"batch"`
	// Flush is how often a host runs the local pass on a URL_pool smaller than Batch.
	Flush Duration `yaml:"flush"`
	// AnswerTimeout bounds the wait for the hosts' answers to a request: a host that has
	// not answered by then is left out of the round (counted).
	AnswerTimeout Duration `yaml:"answer_timeout"`
	// RemoteTimeout bounds the wait for another network's answer. A network that is not
	// the home of any URL still in the frame is then left out (counted); a home network
	// is asked again (counted), because its answer decides (see the package doc).
	RemoteTimeout Duration `yaml:"remote_timeout"`
	// Heartbeat is the membership heartbeat interval; MemberTTL how long a silent member
	// stays listed.
	Heartbeat Duration `yaml:"heartbeat"`
	MemberTTL Duration `yaml:"member_ttl"`
	// Stable is how long the whole system must be seen idle, twice, before it is done.
	Stable Duration `yaml:"stable"`
	// RedisTimeout is how long a center or a host goes on retrying a Redis it needs (its
	// own, or a host's center's) while every attempt fails, before it exits with an error
	// that names the Redis: a Redis Cluster that lost a master with no replica to take
	// over answers CLUSTERDOWN until the master is back, and a process that only logged
	// warnings would hang. Restarted once the Redis is back, the node resumes where it
	// stopped. Default DefaultRedisTimeout.
	RedisTimeout Duration `yaml:"redis_timeout"`
	// Networks lists every network. Their names are the home networks of the URLs.
	Networks []Network `yaml:"networks"`
}

// Network is one LAN: its center's Redis and its hosts.
type Network struct {
	// Name is the network's name (CheckName).
	Name string `yaml:"name"`
	// CenterRedis is the URL of the center's Redis (center_Redis).
	CenterRedis string `yaml:"center_redis"`
	// Hosts are the network's crawler hosts known in advance; more may join with flags.
	Hosts []HostEntry `yaml:"hosts"`
}

// HostEntry is one crawler machine of the configuration.
type HostEntry struct {
	// ID names the host inside its network (CheckName).
	ID string `yaml:"id"`
	// Redis is the URL of the host's own Redis (local_Redis).
	Redis string `yaml:"redis"`
}

// LoadConfig reads and validates a YAML configuration file. Unknown keys are errors.
func LoadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read protocol configuration: %w", err)
	}
	defer f.Close()
	var c Config
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("cannot parse protocol configuration %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid protocol configuration %s: %w", path, err)
	}
	return &c, nil
}

// Defaults fills in zero fields.
func (c *Config) Defaults() {
	if c.Crawl == "" {
		c.Crawl = "default"
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	def(&c.Flush, DefaultFlush)
	def(&c.AnswerTimeout, DefaultAnswerTimeout)
	def(&c.RemoteTimeout, DefaultRemoteTimeout)
	def(&c.Heartbeat, DefaultHeartbeat)
	def(&c.MemberTTL, DefaultMemberTTL)
	def(&c.Stable, DefaultStable)
	def(&c.RedisTimeout, DefaultRedisTimeout)
}

// Validate fills in defaults and checks the configuration: names, unique networks and
// hosts, a center Redis per network, a batch within the frame limit.
func (c *Config) Validate() error {
	c.Defaults()
	if err := CheckName(c.Crawl); err != nil {
		return fmt.Errorf("crawl: %w", err)
	}
	if c.Batch < 1 || c.Batch > MaxFrameURLs {
		return fmt.Errorf("batch is %d: want 1–%d URLs per frame", c.Batch, MaxFrameURLs)
	}
	if len(c.Networks) == 0 {
		return errors.New("no networks: list at least one under networks: with a name and a center_redis")
	}
	if c.MemberTTL < 2*c.Heartbeat {
		return fmt.Errorf("member_ttl %v is below twice the heartbeat %v: raise it", time.Duration(c.MemberTTL), time.Duration(c.Heartbeat))
	}
	seen := map[string]bool{}
	for i, n := range c.Networks {
		if err := CheckName(n.Name); err != nil {
			return fmt.Errorf("network %d: %w", i+1, err)
		}
		if seen[n.Name] {
			return fmt.Errorf("network %q listed twice: names must be unique", n.Name)
		}
		seen[n.Name] = true
		if n.CenterRedis == "" {
			return fmt.Errorf("network %q has no center_redis: give the URL of its center's Redis", n.Name)
		}
		hosts := map[string]bool{}
		for _, h := range n.Hosts {
			if err := CheckName(h.ID); err != nil {
				return fmt.Errorf("network %q: host: %w", n.Name, err)
			}
			if hosts[h.ID] {
				return fmt.Errorf("network %q: host %q listed twice", n.Name, h.ID)
			}
			hosts[h.ID] = true
		}
	}
	return nil
}

// Network returns the named network, or false.
func (c *Config) Network(name string) (Network, bool) {
	for _, n := range c.Networks {
		if n.Name == name {
			return n, true
		}
	}
	return Network{}, false
}

// NetworkNames returns the networks' names, sorted: the candidates of Home.
func (c *Config) NetworkNames() []string {
	out := make([]string, len(c.Networks))
	for i, n := range c.Networks {
		out[i] = n.Name
	}
	slices.Sort(out)
	return out
}

// Home is the home network of a URL: the network whose center decides, first come
// first served, which frame may pass it, and whose hosts crawl it. It is Pick of the
// URL's host:port over the configured networks, so a site has one home: its politeness
// and its robots.txt stay in one network (and, inside it, with one host).
func (c *Config) Home(rawURL string) string { return Pick(Site(rawURL), c.NetworkNames()) }

// Site returns the host:port of a URL (the URL itself if it does not parse).
func Site(rawURL string) string {
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		return u.Host
	}
	return rawURL
}

// Fingerprint identifies the parts of the configuration every node must agree on (the
// crawl, the batch and the network names, which decide homes).
func (c *Config) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d\n", c.Crawl, c.Batch)
	for _, n := range c.NetworkNames() {
		fmt.Fprintf(h, "%s\n", n)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Outage measures how long a Redis has failed without a success in between, for a loop
// that retries it: Fail returns an error once the failures have lasted longer than the
// limit (Config.RedisTimeout), OK ends the outage. Not safe for concurrent use: one per
// loop.
type Outage struct {
	// What names the Redis in the error, e.g. "this center's Redis".
	What  string
	Limit time.Duration
	since time.Time
}

// Fail records a failed attempt; it returns nil while the outage is shorter than Limit,
// else an error that wraps err and says what to do.
func (o *Outage) Fail(err error) error {
	now := time.Now()
	if o.since.IsZero() {
		o.since = now
	}
	if o.Limit <= 0 || now.Sub(o.since) < o.Limit {
		return nil
	}
	return fmt.Errorf("cannot use %s: every attempt failed for %v: %w; check that Redis (a Redis Cluster that lost a master without a replica answers CLUSTERDOWN until the master is back), then start this node again: it resumes where it stopped",
		o.What, now.Sub(o.since).Round(time.Millisecond), err)
}

// OK records a success: the outage, if any, is over.
func (o *Outage) OK() { o.since = time.Time{} }
