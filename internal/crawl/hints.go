package crawl

import (
	"context"
	"time"

	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
	"github.com/spider-crawler/spider/internal/revisit"
)

// Sitemap <lastmod> for URLs already seen (issue 26).
//
// A sitemap's page requests carry their <lastmod> in a hint entry
// (sitemaps.go). The state's Discover drops the URLs it has seen, so the
// hint of a page already fetched would never reach its schedule; after the
// sitemap's completion, Finish hands the hints to the State's
// crawlstate.Rescheduler, which reads each seen URL's revisit record and
// lets revisit.Policy.Hint bring its next fetch forward:
//
//   - to the later of now and its last fetch + the lower bound
//     (--revisit-min, or the host's or topic's), never later than it was;
//   - once per lastmod (Entry.HintLastMod): the same lastmod read again,
//     or an older one, does nothing;
//   - only for a lastmod after our copy's fetch and not in the future;
//   - never for a URL that is not scheduled (--revisit off, a page done
//     for good), one whose last fetch failed (its retry back-off rules),
//     one being fetched (pending), nor under --revisit off;
//   - a URL whose hints proved wrong twice (fetched early for no change)
//     ignores them from then on.
//
// The URL then waits in the due index like any revisit: FeedRevisits
// takes due URLs within --revisit-share, so a sitemap that says every page
// changed every time takes no more of the request rate than revisits may.
// In a p2p crawl the hints of URLs in buckets the node does not own are
// not applied (a sitemap lists its own host's URLs, in the sitemap's
// bucket, but for cross-submitted ones).

// sitemapHints applies the lastmod hints of a sitemap's discovered
// requests to the schedule of the URLs already seen, and returns how many
// moved. A state without a crawlstate.Rescheduler applies none.
func (s *Scheduler) sitemapHints(ctx context.Context, discovered []frontier.Request) (int, error) {
	rs, ok := s.st.(crawlstate.Rescheduler)
	if !ok || s.rv.policy.Mode == revisit.ModeOff {
		return 0, nil
	}
	hints := map[string]time.Time{}
	var urls []string
	for _, d := range discovered {
		if d.Kind != frontier.KindPage || d.Schedule == "" {
			continue
		}
		h, err := revisit.UnmarshalEntry([]byte(d.Schedule))
		if err != nil || h.HintLastMod.IsZero() {
			continue
		}
		prev, dup := hints[d.URL]
		if !dup {
			urls = append(urls, d.URL)
		}
		if h.HintLastMod.After(prev) {
			hints[d.URL] = h.HintLastMod
		}
	}
	if len(urls) == 0 {
		return 0, nil
	}
	now := s.rv.now()
	p := &s.rv.policy
	n, err := rs.Reschedule(ctx, urls, func(rec frontier.Request, due time.Time) (string, time.Time, bool) {
		if due.IsZero() {
			return "", time.Time{}, false // not in the due index: not scheduled
		}
		e, err := revisit.UnmarshalEntry([]byte(rec.Schedule))
		if err != nil {
			return "", time.Time{}, false
		}
		if !p.Hint(&e, hints[rec.URL], revisit.FreqUnknown, now, hostname(rec.URL), rec.Topic) || !e.Next.Before(due) {
			return "", time.Time{}, false
		}
		return string(e.AppendBinary(nil)), e.Next, true
	})
	if n > 0 {
		s.rv.hinted.Add(int64(n))
		s.rv.m.hinted.Add(float64(n))
		s.rv.signal()
	}
	return n, err
}
