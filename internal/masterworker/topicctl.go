package masterworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/topics"
)

// A topics crawl on the master–worker topology (design §4 on a cluster):
// the master is the coordinator, whose scheduler runs PQ-MCSA over the whole
// frontier, and the workers are the crawl nodes. What the rest of spider
// reads and writes of it in Redis is here: the coordinator's status with
// each node's load (PublishTopicStatus, ReadTopicStatus: spider status, the
// dashboard) and the priority overrides that spider control and the HTTP
// API write (SetTopicPriority) and the coordinator applies on its next tick
// (TopicPriorities, ApplyTopicPriorities).

// ErrNotTopics is returned (wrapped) by SetTopicPriority for a crawl whose
// Redis holds neither a topics config nor a topics status: not a topics
// crawl, or one whose coordinator has not started yet.
var ErrNotTopics = errors.New("not a topics crawl")

// NodeLoad is one crawl node's load as the coordinator last saw it
// (topics.NodeLoad: the HTTP front shows it without linking this package).
type NodeLoad = topics.NodeLoad

// TopicStatus is the coordinator's status of a topics crawl
// (topics.ClusterStatus).
type TopicStatus = topics.ClusterStatus

// PublishTopicStatus writes st as the crawl's topics status (key
// topics:status, replacing the previous one). The coordinator calls it every
// daemon tick; the key stays after the crawl ends, for spider status.
func PublishTopicStatus(ctx context.Context, rdb redis.UniversalClient, crawl string, st TopicStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cannot encode the topics status: %w", err)
	}
	if err := rdb.Set(ctx, newKeys(crawl).topicsStatus(), b, 0).Err(); err != nil {
		return fmt.Errorf("cannot publish the topics status of crawl %s: %w", crawl, err)
	}
	return nil
}

// ReadTopicStatus reads the crawl's topics status. ok is false (and err
// nil) when there is none: not a topics crawl, or its coordinator has not
// published yet. A status that does not decode is an error.
func ReadTopicStatus(ctx context.Context, rdb redis.UniversalClient, crawl string) (st TopicStatus, ok bool, err error) {
	key := newKeys(crawl).topicsStatus()
	b, err := rdb.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("cannot read the topics status of crawl %s: %w", crawl, err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("cannot decode the topics status of crawl %s (key %s; the coordinator rewrites it every tick, a newer spider may have written it): %w", crawl, key, err)
	}
	return st, true, nil
}

// SetTopicPriority records p as the priority of topic in the crawl (key
// topics:priority); the coordinator applies it on its next daemon tick
// (topics.Scheduler.SetPriority) and saves it in the task records, and it
// stays in force until changed again, across coordinator restarts. p must
// be in 0..topics.MaxPriority (else an error wrapping
// topics.ErrPriorityRange). The topic must be one of the crawl's (or
// topics.OtherTopic), judged by the coordinator's topics config, or its
// status when no config is published: else an error wrapping
// topics.ErrUnknownTopic naming the crawl's topics. A crawl with neither is
// refused with ErrNotTopics. Nothing is written when an error is returned.
func SetTopicPriority(ctx context.Context, rdb redis.UniversalClient, crawl, topic string, p int) error {
	if err := topics.CheckPriority(p); err != nil {
		return fmt.Errorf("cannot set the priority of topic %s: %w", topic, err)
	}
	names, err := crawlTopics(ctx, rdb, crawl)
	if err != nil {
		return err
	}
	if topic != topics.OtherTopic && !slices.Contains(names, topic) {
		return fmt.Errorf("cannot set the priority of topic %q: %w: crawl %s's topics are %s",
			topic, topics.ErrUnknownTopic, crawl, strings.Join(append(names, topics.OtherTopic), ", "))
	}
	if err := rdb.HSet(ctx, newKeys(crawl).topicsPriority(), topic, p).Err(); err != nil {
		return fmt.Errorf("cannot record the priority of topic %s in crawl %s: %w", topic, crawl, err)
	}
	return nil
}

// crawlTopics returns the names of the crawl's topics from its topics
// config, else from its status; ErrNotTopics when it has neither.
func crawlTopics(ctx context.Context, rdb redis.UniversalClient, crawl string) ([]string, error) {
	k := newKeys(crawl)
	pipe := rdb.Pipeline()
	cfg, stat := pipe.Get(ctx, k.topicsConfig()), pipe.Get(ctx, k.topicsStatus())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("cannot read the topics of crawl %s: %w", crawl, err)
	}
	// The config is the coordinator's topics.Config as JSON; names are
	// matched case-insensitively by encoding/json whatever its key style.
	if b, err := cfg.Bytes(); err == nil {
		var c struct {
			Topics []struct{ Name string }
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("cannot decode the topics config of crawl %s (key %s): %w", crawl, k.topicsConfig(), err)
		}
		names := make([]string, 0, len(c.Topics))
		for _, t := range c.Topics {
			names = append(names, t.Name)
		}
		return names, nil
	}
	if b, err := stat.Bytes(); err == nil {
		var st TopicStatus
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, fmt.Errorf("cannot decode the topics status of crawl %s (key %s): %w", crawl, k.topicsStatus(), err)
		}
		var names []string
		for _, t := range st.Tasks {
			if t.Granularity == topics.GranularityTopic.String() && t.Name != topics.OtherTopic {
				names = append(names, t.Name)
			}
		}
		return names, nil
	}
	return nil, fmt.Errorf("cannot set a topic priority in crawl %s: %w: it has no topics config in Redis (run its coordinator with spider master --topics FILE; spider status --crawl %s shows what it is)",
		crawl, ErrNotTopics, crawl)
}

// TopicPriorities returns the crawl's priority overrides (topic →
// priority) as SetTopicPriority wrote them; empty when there are none.
// Entries that are not a priority in 0..topics.MaxPriority (the hash edited
// by hand) are left out.
func TopicPriorities(ctx context.Context, rdb redis.UniversalClient, crawl string) (map[string]int, error) {
	h, err := rdb.HGetAll(ctx, newKeys(crawl).topicsPriority()).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read the topic priorities of crawl %s: %w", crawl, err)
	}
	out := make(map[string]int, len(h))
	for topic, v := range h {
		p, err := strconv.Atoi(v)
		if err != nil || topics.CheckPriority(p) != nil {
			continue
		}
		out[topic] = p
	}
	return out, nil
}

// ApplyTopicPriorities reads the crawl's overrides (TopicPriorities) and
// calls set for each, in topic order; set is the coordinator's
// topics.Scheduler.SetPriority (setting a priority a topic already has
// changes nothing, so applying every tick is cheap). It returns the first
// error of set joined with the others (an override of a topic the
// coordinator's file no longer has is such an error) after trying all.
func ApplyTopicPriorities(ctx context.Context, rdb redis.UniversalClient, crawl string, set func(topic string, p int) error) error {
	prios, err := TopicPriorities(ctx, rdb, crawl)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(prios))
	for t := range prios {
		names = append(names, t)
	}
	sort.Strings(names)
	var errs []error
	for _, t := range names {
		if err := set(t, prios[t]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
