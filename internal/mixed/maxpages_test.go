package mixed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/spider-crawler/spider/internal/crawl/limittest"
	"github.com/spider-crawler/spider/internal/protocol"
	"github.com/spider-crawler/spider/internal/websim"
)

// waitNodes waits for the named nodes to return by themselves.
func (s *system) waitNodes(timeout time.Duration, names ...string) {
	s.t.Helper()
	deadline := time.After(timeout)
	for _, n := range names {
		s.mu.Lock()
		ch := s.errs[n]
		s.mu.Unlock()
		select {
		case err := <-ch:
			if err != nil {
				s.t.Errorf("%s: %v", n, err)
			}
			s.mu.Lock()
			delete(s.running, n)
			s.mu.Unlock()
		case <-deadline:
			s.report()
			s.t.Fatalf("%s did not finish within %v", n, timeout)
		}
	}
}

// TestMaxPagesExact: two networks of two hosts stop at exactly --max-pages
// records over all the hosts' data directories (one crawl-wide limit), and
// the web saw no other page request, at several concurrency levels with two
// requests per host at a time; the hosts started again with a larger limit
// resume to exactly that many, losing nothing and fetching nothing twice.
func TestMaxPagesExact(t *testing.T) {
	for _, conc := range []int{1, 4, 8} {
		t.Run(fmt.Sprint("concurrency-", conc), func(t *testing.T) {
			s := newSystem(t, 2, 2, websim.Config{Seed: 61, Hosts: 12, PagesPerHost: 30, Latency: time.Millisecond})
			s.crawl.Delay = 0
			s.crawl.PerHost = 2
			s.crawl.Concurrency = conc
			for _, nw := range s.cfg.Networks {
				s.startCenter(nw.Name, 0)
			}
			var hosts, dirs []string
			for _, nw := range s.cfg.Networks {
				for _, h := range nw.Hosts {
					hosts = append(hosts, protocol.HostAddr(nw.Name, h.ID))
					dirs = append(dirs, s.dirs[protocol.HostAddr(nw.Name, h.ID)])
				}
			}
			run := func(limit int64) {
				t.Helper()
				s.crawl.MaxPages = limit
				for _, nw := range s.cfg.Networks {
					for _, h := range nw.Hosts {
						s.startHost(nw.Name, h.ID, 0)
					}
				}
				s.waitNodes(2*time.Minute, hosts...)
			}
			run(37)
			first := limittest.Exact(t, s.srv, 37, dirs...)
			run(90)
			limittest.Exact(t, s.srv, 90, dirs...)
			limittest.Resumed(t, first, 90, dirs...)
		})
	}
}
