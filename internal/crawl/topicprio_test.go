package crawl_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/topics"
)

// TestSetTopicPriority changes a topic's priority on an open engine: the
// scheduler's status shows it, bad input is refused, and an engine opened
// again on the same directory keeps the change (saved at once). A crawl
// without topics refuses with ErrNoTopics.
func TestSetTopicPriority(t *testing.T) {
	dir := t.TempDir()
	tfile := filepath.Join(dir, "topics.yaml")
	yml := "topics:\n  - {name: news, priority: 2, seeds: [\"http://news.test/\"], terms: [vote]}\n" +
		"  - {name: tax, priority: 0, seeds: [\"http://tax.test/\"], terms: [refund]}\n"
	if err := os.WriteFile(tfile, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := crawl.NewConfig()
	cfg.Data = filepath.Join(dir, "data")
	cfg.Topics = tfile
	open := func() *crawl.Engine {
		t.Helper()
		eng, err := crawl.New(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	tests := []struct {
		topic   string
		p       int
		wantErr error
	}{
		{"tax", 5, nil},
		{"tax", 10, topics.ErrPriorityRange},
		{"sports", 1, topics.ErrUnknownTopic},
		{topics.OtherTopic, 1, nil},
	}
	for _, tc := range tests {
		if err := eng.SetTopicPriority(tc.topic, tc.p); !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
			t.Fatalf("SetTopicPriority(%q, %d) = %v, want %v", tc.topic, tc.p, err, tc.wantErr)
		}
	}
	st, ok := eng.TopicStatus()
	if !ok || prio(st, "tax") != 5 || prio(st, "news") != 2 || prio(st, topics.OtherTopic) != 1 {
		t.Fatalf("status after the change: %+v", st)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	eng = open()
	if st, _ := eng.TopicStatus(); prio(st, "tax") != 5 {
		t.Fatalf("tax after reopening: %d, want the changed 5", prio(st, "tax"))
	}
	eng.Close()

	plain := crawl.NewConfig()
	plain.Data = filepath.Join(dir, "plain")
	plain.Seeds = []string{"http://a.test/"}
	eng, err := crawl.New(plain, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if err := eng.SetTopicPriority("news", 1); !errors.Is(err, crawl.ErrNoTopics) || !strings.Contains(err.Error(), "--topics") {
		t.Fatalf("crawl without topics: %v, want ErrNoTopics naming --topics", err)
	}
}

func prio(st topics.Status, name string) int {
	for _, t := range st.Tasks {
		if t.Name == name {
			return t.Priority
		}
	}
	return -1
}
