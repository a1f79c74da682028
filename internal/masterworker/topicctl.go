package masterworker

// Minimal version of the topics crawl's control and status functions with
// the signatures agreed for issue #25 (h1 wrote it to call them; h2 owns
// this file and replaces it with the full one).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/topics"
)

// NodeLoad is one crawl node's load as the coordinator of a topics crawl
// sees it (from the node's heartbeat).
type NodeLoad struct {
	Worker      int       `json:"worker"` // worker number
	Node        string    `json:"node"`   // node id/host
	InFlight    int       `json:"in_flight"`
	Queued      int       `json:"queued"`
	PagesPerSec float64   `json:"pages_per_sec"`
	Errors      int64     `json:"errors"`
	Fetched     int64     `json:"fetched"`
	Buckets     int       `json:"buckets"` // logical nodes it owns on the ring
	Alive       bool      `json:"alive"`
	LastBeat    time.Time `json:"last_beat"`
}

// TopicStatus is the coordinator's view of a topics crawl: the scheduler's
// status and each crawl node's load, rewritten every daemon tick.
type TopicStatus struct {
	topics.Status
	Nodes []NodeLoad `json:"nodes"`
	At    time.Time  `json:"at"`
}

// PublishTopicStatus writes st as the crawl's topics:status.
func PublishTopicStatus(ctx context.Context, rdb redis.UniversalClient, crawl string, st TopicStatus) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("cannot encode the topics status: %w", err)
	}
	if err := rdb.Set(ctx, newKeys(crawl).topicsStatus(), b, 0).Err(); err != nil {
		return fmt.Errorf("cannot publish the topics status: %w", err)
	}
	return nil
}

// ReadTopicStatus reads the crawl's topics:status; false when the crawl is
// not a topics crawl (no status published).
func ReadTopicStatus(ctx context.Context, rdb redis.UniversalClient, crawl string) (TopicStatus, bool, error) {
	var st TopicStatus
	b, err := rdb.Get(ctx, newKeys(crawl).topicsStatus()).Bytes()
	if errors.Is(err, redis.Nil) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("cannot read the topics status: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("cannot decode the topics status: %w", err)
	}
	return st, true, nil
}

// SetTopicPriority records a priority override for topic (0..MaxPriority);
// the coordinator applies it on its next daemon tick.
func SetTopicPriority(ctx context.Context, rdb redis.UniversalClient, crawl, topic string, p int) error {
	if p < 0 || p > topics.MaxPriority {
		return fmt.Errorf("priority %d out of range: use 0..%d", p, topics.MaxPriority)
	}
	if err := rdb.HSet(ctx, newKeys(crawl).topicsPriority(), topic, p).Err(); err != nil {
		return fmt.Errorf("cannot record the priority of topic %s: %w", topic, err)
	}
	return nil
}

// TopicPriorities returns the crawl's priority overrides (topic → priority).
func TopicPriorities(ctx context.Context, rdb redis.UniversalClient, crawl string) (map[string]int, error) {
	m, err := rdb.HGetAll(ctx, newKeys(crawl).topicsPriority()).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read the topic priority overrides: %w", err)
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		if p, err := strconv.Atoi(v); err == nil {
			out[k] = p
		}
	}
	return out, nil
}
