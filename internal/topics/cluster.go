package topics

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spider-crawler/spider/internal/frontier"
)

// This file holds what a topics crawl spread over several processes (the
// master–worker coordinator and its crawl nodes) needs beyond the
// single-node scheduler: the canonical form of a topics file, the
// differences between two of them, and charging a fetch with a relevance
// score computed elsewhere.

// Canonical is the canonical form of a loaded topics file (defaults
// applied, as Load and Parse return it): JSON with durations in
// nanoseconds, the same bytes for two files that schedule the same way
// whatever their YAML layout. A coordinator publishes it; crawl nodes
// compare theirs with it (Diff).
func Canonical(c *Config) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the topics configuration: %w", err)
	}
	return b, nil
}

// ParseCanonical decodes Canonical's bytes.
func ParseCanonical(b []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: cannot decode the canonical topics configuration: %w", ErrConfig, err)
	}
	return &c, nil
}

// Diff lists the differences between the topics configuration a
// coordinator runs (coord) and a crawl node's (local, read from
// localName), one sentence each, naming the topic and the setting with
// both values, e.g. `topic "news": priority 2 on the coordinator, 3 in
// ./topics.yaml` or `topic "sports" only in the coordinator's file`. Nil
// when they schedule alike.
func Diff(coord, local *Config, localName string) []string {
	var out []string
	val := func(v any) string {
		switch x := v.(type) {
		case Duration:
			return time.Duration(x).String()
		case string:
			return fmt.Sprintf("%q", x)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	cmp := func(where, field string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			out = append(out, fmt.Sprintf("%s%s %s on the coordinator, %s in %s", where, field, val(a), val(b), localName))
		}
	}
	cmp("", "period", coord.Period, local.Period)
	cmp("", "tick", coord.Tick, local.Tick)
	cmp("", "base_slice", coord.BaseSlice, local.BaseSlice)
	cmp("", "slices", coord.Slices, local.Slices)
	cmp("", "min_slice", coord.MinSlice, local.MinSlice)
	cmp("", "quantum", coord.Quantum, local.Quantum)
	cmp("", "relevance", coord.Relevance, local.Relevance)
	cmp("", "mode", coord.Mode, local.Mode)
	cmp("", "other_priority", coord.OtherPriority, local.OtherPriority)
	byName := func(c *Config) map[string]*Topic {
		m := map[string]*Topic{}
		for i := range c.Topics {
			m[c.Topics[i].Name] = &c.Topics[i]
		}
		return m
	}
	ct, lt := byName(coord), byName(local)
	for _, name := range slices.Sorted(maps.Keys(ct)) {
		a, b := ct[name], lt[name]
		if b == nil {
			out = append(out, fmt.Sprintf("topic %q only in the coordinator's file", name))
			continue
		}
		w := fmt.Sprintf("topic %q: ", name)
		cmp(w, "priority", a.Priority, b.Priority)
		cmp(w, "seeds", a.Seeds, b.Seeds)
		cmp(w, "patterns", a.Patterns, b.Patterns)
		cmp(w, "urls", a.URLs, b.URLs)
		cmp(w, "terms", a.Terms, b.Terms)
		cmp(w, "min_pages", a.MinPages, b.MinPages)
		cmp(w, "recrawl", a.Recrawl, b.Recrawl)
		cmp(w, "hubs", a.Hubs, b.Hubs)
	}
	for _, name := range slices.Sorted(maps.Keys(lt)) {
		if ct[name] == nil {
			out = append(out, fmt.Sprintf("topic %q only in %s", name, localName))
		}
	}
	if len(out) == 0 {
		// Same topics and knobs, another order: IDs and round robin differ.
		for i := range coord.Topics {
			if coord.Topics[i].Name != local.Topics[i].Name {
				out = append(out, fmt.Sprintf("the topics are listed in another order (topic %d is %q on the coordinator, %q in %s)",
					i+1, coord.Topics[i].Name, local.Topics[i].Name, localName))
				break
			}
		}
	}
	return out
}

// Score is the relevance of a page's text to the topic of r (its URL
// task's topic, else its Topic tag; 0 for URLs of no topic): what
// Finished charges. A crawl node computes it where the text is and sends
// it to the coordinator, which charges it with FinishedScore.
func (s *Scheduler) Score(r frontier.Request, text string) float64 {
	s.mu.Lock()
	th := s.theme(s.taskOf(r.URL, r.Topic))
	s.mu.Unlock()
	return th.scorer.Score(text)
}

// Refused charges a URL whose request robots.txt disallowed: its crawl
// time counts against its task's slice, but it is no page; it is counted
// in the topic's Blocked, and a topic whose URLs were all refused says so
// in its status note.
func (s *Scheduler) Refused(r frontier.Request, elapsed time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.charge(r, elapsed)
	t.Blocked++
	if th := s.theme(t); th != t {
		th.Blocked++
	}
}

// NodeLoad is one crawl node's load as a topics crawl's coordinator last
// saw it (spider master --topics): what it hands out tasks by, besides the
// topics' priorities.
type NodeLoad struct {
	Worker      int       `json:"worker"`        // worker number (its srq:N)
	Node        string    `json:"node"`          // node id or host
	InFlight    int       `json:"in_flight"`     // tasks taken, not yet answered
	Queued      int       `json:"queued"`        // tasks waiting in its own queue
	PagesPerSec float64   `json:"pages_per_sec"` // over the coordinator's last window
	Errors      int64     `json:"errors"`        // failed fetches, all runs
	Fetched     int64     `json:"fetched"`       // pages fetched, all runs
	Buckets     int       `json:"buckets"`       // logical nodes it owns on the ring
	Alive       bool      `json:"alive"`         // heart-beating; false: its tasks go back out
	LastBeat    time.Time `json:"last_beat"`     // its last heartbeat (Redis server time)
}

// ClusterStatus is the coordinator's status of a topics crawl on a cluster:
// the PQ-MCSA scheduler's (Status, its fields inlined in the JSON) and each
// crawl node's load, as of At. The coordinator publishes it in Redis
// (masterworker.PublishTopicStatus); spider status and the dashboard show it.
type ClusterStatus struct {
	Status
	Nodes []NodeLoad `json:"nodes"`
	At    time.Time  `json:"at"`
}
