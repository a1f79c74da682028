package redisview

import (
	"context"
	"errors"
	"fmt"

	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/server"
)

// redisTopics fills st's topics and crawl nodes from the coordinator's
// status of a topics crawl, when there is one. A status that cannot be
// read leaves them out: the rest of the dashboard still shows.
func (v *View) redisTopics(ctx context.Context, st *server.CrawlStatus) {
	ts, ok, err := masterworker.ReadTopicStatus(ctx, v.rdb, v.crawl)
	if err != nil || !ok {
		return
	}
	st.Topics, st.TopicsAt = server.TopicRows(ts.Status), ts.At.UTC()
	st.TopicNodes = append([]masterworker.NodeLoad{}, ts.Nodes...)
}

// SetTopicPriority implements server.Controller for a topics crawl on a cluster:
// the override is written to Redis (masterworker.SetTopicPriority) and the
// coordinator applies it at its next daemon tick. Other distributed crawls
// answer server.ErrUnsupported.
func (v *View) SetTopicPriority(ctx context.Context, topic string, p int) error {
	err := masterworker.SetTopicPriority(ctx, v.rdb, v.crawl, topic, p)
	if errors.Is(err, masterworker.ErrNotTopics) {
		return fmt.Errorf("%w: %w", server.ErrUnsupported, err)
	}
	err = server.TopicErr(err)
	if err != nil && !errors.Is(err, server.ErrInvalid) && !errors.Is(err, server.ErrUnsupported) {
		return fmt.Errorf("%w: %w", server.ErrUnavailable, err)
	}
	return err
}
