package masterworker

import (
	"testing"

	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
)

// TestResultSchedules: a discovered request's Schedule (binary, not
// UTF-8: a sitemap's lastmod hint) crosses the result packet intact, and
// the sender's requests are left as they were.
func TestResultSchedules(t *testing.T) {
	sch := string([]byte{1, 0x80, 0xff, 0xfe, 0, 7})
	disc := []frontier.Request{{URL: "http://h/a", Schedule: sch}, {URL: "http://h/b"}}
	b, err := encodeResult(Result{ID: 3, Visit: crawl.Visit{Outcome: "sitemap", Discovered: disc}})
	if err != nil {
		t.Fatal(err)
	}
	if disc[0].Schedule != sch {
		t.Fatal("encodeResult changed the caller's requests")
	}
	r, err := decodeResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Visit.Discovered; len(got) != 2 || got[0].Schedule != sch || got[1].Schedule != "" || r.Schedules != nil {
		t.Fatalf("decoded %+v (schedules %v)", got, r.Schedules)
	}
	if _, err := decodeResult([]byte(`{"id":1,"visit":{"outcome":"200"},"schedules":{"3":"AQ=="}}`)); err == nil {
		t.Fatal("a schedule of a link that is not there was accepted")
	}
}
