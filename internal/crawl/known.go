package crawl

import (
	"sync"

	"github.com/spider-crawler/spider/internal/frontier"
)

// knownLinks remembers the links recent completions reported to the State,
// each with the smallest depth it was reported at, so that Finish does not
// report them again: on documentation-like sites every page repeats the
// same navigation (hundreds of links), and each repeat costs the State a
// seen-set lookup (Bloom probes, a B+tree lookup) for nothing. Dropping a
// repeat is exact, not a guess: a link a committed transaction already
// reported at a depth ≤ d is seen by the State, and reporting it again at
// depth d changes nothing there (State.Complete lowers only to a smaller
// depth). Redirect targets are never dropped, and a State that keeps each
// page's links (relinking) gets every link. It holds at most 2×max entries
// (two generations: when the current one is full it becomes the old one).
// It is safe for concurrent use.
type knownLinks struct {
	mu       sync.Mutex
	max      int
	cur, old map[string]int
}

func newKnownLinks(max int) *knownLinks {
	return &knownLinks{max: max, cur: map[string]int{}}
}

// filter returns the requests of reqs not known at their depth or less
// (reqs itself when all are new; otherwise a new slice).
func (k *knownLinks) filter(reqs []frontier.Request) []frontier.Request {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []frontier.Request
	for i, r := range reqs {
		if k.known(r) {
			if out == nil {
				// Sized for what came before: on a site being crawled
				// most of a page's links are known, and a slice of
				// len(reqs) would be mostly unused (49 KB for the 440
				// links of a documentation page).
				out = make([]frontier.Request, i, i+8)
				copy(out, reqs[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, r)
		}
	}
	if out == nil {
		return reqs
	}
	return out
}

// has reports whether url is known at depth or less (a request to it at
// depth, not a redirect, would be filtered out).
func (k *knownLinks) has(url string, depth int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.known(frontier.Request{URL: url, Depth: depth})
}

func (k *knownLinks) known(r frontier.Request) bool {
	if r.Redirects > 0 {
		return false
	}
	if d, ok := k.cur[r.URL]; ok && d <= r.Depth {
		return true
	}
	d, ok := k.old[r.URL]
	return ok && d <= r.Depth
}

// add records reqs as reported (their transaction committed).
func (k *knownLinks) add(reqs []frontier.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range reqs {
		if d, ok := k.cur[r.URL]; ok && d <= r.Depth {
			continue
		}
		if len(k.cur) >= k.max {
			k.old, k.cur = k.cur, map[string]int{}
		}
		k.cur[r.URL] = r.Depth
	}
}
