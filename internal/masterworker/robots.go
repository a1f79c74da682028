package masterworker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/crawl"
)

// robotsTTL is how long a shared robots.txt answer is used: RFC 9309 §2.4
// asks crawlers not to keep a cached copy longer than 24 hours.
const robotsTTL = 24 * time.Hour

// RobotsShare keeps the workers' robots.txt answers in Redis, one key per
// robots.txt URL with a 24-hour expiry, so a host's robots.txt is fetched
// once for the whole crawl. Without it every worker that got one of a
// host's URLs fetched the file again: with 4 workers and 5 URLs per host
// that was about 3 robots.txt requests per host instead of 1, a quarter of
// all requests (the master's politeness hands out a host's next URL only
// after the previous one's result came back, so the first worker's answer
// is stored before a second worker needs it).
type RobotsShare struct {
	rdb redis.UniversalClient
	k   keys
}

var _ crawl.RobotsShare = (*RobotsShare)(nil)

// NewRobotsShare returns the robots.txt share of the named crawl.
func NewRobotsShare(rdb redis.UniversalClient, crawlName string) *RobotsShare {
	return &RobotsShare{rdb: rdb, k: newKeys(crawlName)}
}

// LoadRobots returns the stored answer for robotsURL (status, body).
func (s *RobotsShare) LoadRobots(ctx context.Context, robotsURL string) (int, []byte, bool, error) {
	b, err := s.rdb.Get(ctx, s.k.robots(robotsURL)).Bytes()
	if errors.Is(err, redis.Nil) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	status, body, ok := decodeRobots(b)
	if !ok {
		return 0, nil, false, fmt.Errorf("shared robots.txt of %s is malformed", robotsURL)
	}
	return status, body, true, nil
}

// StoreRobots records status and body for robotsURL for robotsTTL.
func (s *RobotsShare) StoreRobots(ctx context.Context, robotsURL string, status int, body []byte) error {
	return s.rdb.Set(ctx, s.k.robots(robotsURL), encodeRobots(status, body), robotsTTL).Err()
}

// encodeRobots writes "STATUS BODY".
func encodeRobots(status int, body []byte) []byte {
	b := strconv.AppendInt(nil, int64(status), 10)
	b = append(b, ' ')
	return append(b, body...)
}

func decodeRobots(b []byte) (int, []byte, bool) {
	i := bytes.IndexByte(b, ' ')
	if i <= 0 {
		return 0, nil, false
	}
	status, err := strconv.Atoi(string(b[:i]))
	if err != nil || status < 100 || status > 599 {
		return 0, nil, false
	}
	return status, b[i+1:], true
}
