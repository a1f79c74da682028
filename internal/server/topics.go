package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/topics"
)

// The topics of a topic-focused crawl (design §4) in the dashboard and the
// control API: in this process (spider crawl --topics --addr, an Engine
// that is also a TopicEngine) or on a cluster (spider master --topics: the
// coordinator's topics.ClusterStatus in Redis, read and changed by the
// CrawlView and Controller of package redisview).

// TopicEngine is what the server uses of an Engine that runs with
// --topics; crawl.Engine is one. An Engine that is not one shows no topics
// and refuses priority changes with ErrUnsupported.
type TopicEngine interface {
	// TopicStatus is the scheduler's status; false without topics.
	TopicStatus() (topics.Status, bool)
	// SetTopicPriority changes a topic's priority (crawl.ErrNoTopics,
	// topics.ErrUnknownTopic, topics.ErrPriorityRange).
	SetTopicPriority(topic string, p int) error
}

var _ TopicEngine = (*crawl.Engine)(nil)

// TopicRows is the dashboard's topics table of st: one row per task of
// granularity topic (the background task "(other)" included), in the
// scheduler's order.
func TopicRows(st topics.Status) []Topic {
	rows := make([]Topic, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		if t.Granularity != topics.GranularityTopic.String() {
			continue
		}
		rows = append(rows, Topic{Name: t.Name, Priority: t.Priority, FilePriority: t.FilePriority, State: t.State,
			SliceTotalMS: t.SliceTotalMS, SliceRemainMS: t.SliceRemainMS, Pages: t.Pages, Relevant: t.Relevant,
			Queued: int64(t.Queued), Preemptions: t.Preemptions, Blocked: t.Blocked, Note: t.Note})
	}
	return rows
}

// TopicErr maps the errors of a priority change to the server's: bad
// input is ErrInvalid (400), a crawl without topics ErrUnsupported (501).
func TopicErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, topics.ErrUnknownTopic), errors.Is(err, topics.ErrPriorityRange):
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case errors.Is(err, crawl.ErrNoTopics):
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return err
}

// dirTopics fills st's topics from the status file of a crawl run with
// --topics in dataDir (topics.StatusFile, rewritten every daemon tick while
// it runs); a crawl without one shows none.
func dirTopics(dataDir string, st *CrawlStatus) {
	if ts, err := topics.ReadStatus(dataDir); err == nil {
		st.Topics, st.TopicsAt = TopicRows(ts), ts.Updated.UTC()
	}
}

// engineTopics fills st's topics from the engine's scheduler.
func (v *EngineView) engineTopics(st *CrawlStatus) {
	te, ok := v.eng.(TopicEngine)
	if !ok {
		return
	}
	if ts, ok := te.TopicStatus(); ok {
		st.Topics, st.TopicsAt = TopicRows(ts), ts.Updated.UTC()
	}
}

// SetTopicPriority implements Controller for a crawl run with --topics in
// this process: the change applies at the next URL handed out and is saved
// in the task records at once (crawl.Scheduler.SetTopicPriority).
func (v *EngineView) SetTopicPriority(_ context.Context, topic string, p int) error {
	if err := v.check("change a topic's priority"); err != nil {
		return err
	}
	te, ok := v.eng.(TopicEngine)
	if !ok {
		return fmt.Errorf("%w: topics are not enabled in this crawl", ErrUnsupported)
	}
	return TopicErr(te.SetTopicPriority(topic, p))
}
