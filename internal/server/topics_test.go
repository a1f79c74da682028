package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/topics"
)

// topicEngine is a fakeEngine that runs a real PQ-MCSA scheduler.
type topicEngine struct {
	*fakeEngine
	sched *topics.Scheduler // nil: the crawl runs without topics
}

func (e *topicEngine) TopicStatus() (topics.Status, bool) {
	if e.sched == nil {
		return topics.Status{}, false
	}
	return e.sched.Status(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)), true
}

func (e *topicEngine) SetTopicPriority(topic string, p int) error {
	if e.sched == nil {
		return fmt.Errorf("cannot set the priority of topic %s: %w", topic, crawl.ErrNoTopics)
	}
	return e.sched.SetPriority(topic, p)
}

const serverTopicsYAML = `topics:
  - {name: news, priority: 2, seeds: ["http://news.test/"], terms: [vote]}
  - {name: tax, priority: 0, seeds: ["http://tax.test/"], terms: [refund]}
`

func newScheduler(t *testing.T) *topics.Scheduler {
	t.Helper()
	cfg, err := topics.Parse([]byte(serverTopicsYAML))
	if err != nil {
		t.Fatal(err)
	}
	s, err := topics.New(cfg, topics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEngineViewTopics: a crawl in this process run with --topics shows
// its topics and changes their priorities; bad input is ErrInvalid, a crawl
// without topics ErrUnsupported, a finished one ErrConflict.
func TestEngineViewTopics(t *testing.T) {
	ctx := context.Background()
	eng := &topicEngine{fakeEngine: &fakeEngine{state: crawl.StateRunning}, sched: newScheduler(t)}
	v := NewEngineView(eng, t.TempDir(), nil)
	tests := []struct {
		topic string
		p     int
		want  error
	}{
		{"tax", 7, nil},
		{topics.OtherTopic, 1, nil},
		{"tax", 10, ErrInvalid},
		{"tax", -1, ErrInvalid},
		{"sports", 1, ErrInvalid},
	}
	for _, tc := range tests {
		err := v.SetTopicPriority(ctx, tc.topic, tc.p)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("SetTopicPriority(%q, %d) = %v, want %v", tc.topic, tc.p, err, tc.want)
		}
	}
	st, err := v.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{"news": {2, 2}, "tax": {7, 0}, topics.OtherTopic: {1, 0}}
	if len(st.Topics) != len(want) || st.TopicsAt.IsZero() {
		t.Fatalf("topics %+v at %v, want %d rows", st.Topics, st.TopicsAt, len(want))
	}
	for _, r := range st.Topics {
		if w := want[r.Name]; r.Priority != w[0] || r.FilePriority != w[1] || r.State == "" {
			t.Errorf("row %+v, want priority %d (file %d)", r, w[0], w[1])
		}
	}

	plain := NewEngineView(&topicEngine{fakeEngine: &fakeEngine{state: crawl.StateRunning}}, t.TempDir(), nil)
	if err := plain.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrUnsupported) {
		t.Errorf("crawl without topics: %v, want ErrUnsupported", err)
	}
	if st, _ := plain.Snapshot(ctx); len(st.Topics) != 0 {
		t.Errorf("crawl without topics shows topics %+v", st.Topics)
	}
	v.Finished()
	if err := v.SetTopicPriority(ctx, "news", 1); !errors.Is(err, ErrConflict) {
		t.Errorf("finished crawl: %v, want ErrConflict", err)
	}
}

// TestDirViewTopics: spider serve --data of a crawl run with --topics shows
// the topics of its status file.
func TestDirViewTopics(t *testing.T) {
	dir := t.TempDir()
	sched := newScheduler(t)
	if err := sched.SetPriority("tax", 3); err != nil {
		t.Fatal(err)
	}
	if err := topics.WriteStatus(dir, sched.Status(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC))); err != nil {
		t.Fatal(err)
	}
	st, err := NewDirView(dir, nil).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Topics) != 3 || st.Topics[2].Name != "tax" || st.Topics[2].Priority != 3 || st.Topics[2].FilePriority != 0 || st.TopicsAt.IsZero() {
		t.Fatalf("topics %+v at %v", st.Topics, st.TopicsAt)
	}
}

// TestTopicRowsReportRobotsRefusals: a topic whose URLs robots.txt all
// refused shows its refusals and the scheduler's note in the dashboard's
// rows (issue 25: reported, not a silent 0), and URL tasks are left out.
func TestTopicRowsReportRobotsRefusals(t *testing.T) {
	st := topics.Status{Tasks: []topics.TaskStatus{
		{Name: "news", Granularity: topics.GranularityTopic.String(), Priority: 2, Pages: 5},
		{Name: "closed", Granularity: topics.GranularityTopic.String(), Priority: 1, Blocked: 3,
			Note: "no page: robots.txt disallowed all 3 of its URLs requested so far"},
		{Name: "https://a.test/x", Granularity: topics.GranularityURL.String(), Priority: 5},
	}}
	rows := TopicRows(st)
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want the two topics", rows)
	}
	if rows[0].Blocked != 0 || rows[0].Note != "" {
		t.Errorf("news row = %+v, want no refusal", rows[0])
	}
	if rows[1].Blocked != 3 || !strings.Contains(rows[1].Note, "robots.txt disallowed all 3") {
		t.Errorf("closed row = %+v, want 3 refusals and the note", rows[1])
	}
}
