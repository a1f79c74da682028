package content

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sync"

	"github.com/spider-crawler/spider/internal/parse"
)

// Site is the model of one site learned from the pages seen so far: for
// each block subtree hash, and for each link label of a navigation-row
// candidate (see "Navigation rows" in the package documentation), the
// number of distinct pages it was seen on; both kinds share the one table.
// It keeps at most its MaxHashes counts (when full, the hashes seen on the
// fewest pages are dropped first: page-unique blocks, which are most of
// them) and as many page fingerprints, so that the same page seen again (a
// session-id variant, a refetch) is not counted twice. Safe for concurrent
// use.
type Site struct {
	mu     sync.Mutex
	max    int
	navMax int // blocks with 2..navMax links have their links' labels counted (Options.MaxNavLinks)
	pages  int
	counts map[uint64]uint32
	seen   map[uint64]struct{} // fingerprints of the pages observed
}

// NewSite returns an empty site model keeping at most opt.MaxHashes counts.
func NewSite(opt Options) *Site {
	opt = opt.withDefaults()
	return &Site{max: opt.MaxHashes, navMax: opt.MaxNavLinks, counts: map[uint64]uint32{}, seen: map[uint64]struct{}{}}
}

// Observe records the page's blocks: each distinct subtree hash counts one
// more page. A page whose fingerprint was observed before is not counted
// again. It reports whether the page was counted.
func (s *Site) Observe(p *Page) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[p.Fingerprint]; ok {
		return false
	}
	if len(s.seen) >= s.max {
		clear(s.seen) // forget old pages rather than grow; a page seen again then counts twice
	}
	s.seen[p.Fingerprint] = struct{}{}
	s.pages++
	done := make(map[uint64]struct{}, len(p.Blocks))
	for i, b := range p.Blocks {
		s.count(b.Hash, done)
		if s.navMax > 0 && p.navCandidate(i, Options{MaxNavLinks: s.navMax}) {
			p.navLabels(i, func(h uint64, _ *parse.Link) { s.count(h, done) })
		}
	}
	return true
}

// count adds one page to h's count unless done holds h. s.mu is held.
func (s *Site) count(h uint64, done map[uint64]struct{}) {
	if _, ok := done[h]; ok {
		return
	}
	done[h] = struct{}{}
	if c, ok := s.counts[h]; ok {
		if c < ^uint32(0) {
			s.counts[h] = c + 1
		}
		return
	}
	if len(s.counts) >= s.max {
		s.shrink()
	}
	s.counts[h] = 1
}

// shrink drops the counts of the fewest pages until at most 3/4 of max
// are left; ties go by hash value, so the same pages always leave the same
// counts.
func (s *Site) shrink() {
	keep := max(s.max*3/4, 1)
	if len(s.counts) <= keep {
		return
	}
	type hc struct {
		h uint64
		c uint32
	}
	all := make([]hc, 0, len(s.counts))
	for h, c := range s.counts {
		all = append(all, hc{h, c})
	}
	slices.SortFunc(all, func(a, b hc) int {
		if a.c != b.c {
			return int(a.c) - int(b.c)
		}
		if a.h < b.h {
			return -1
		}
		if a.h > b.h {
			return 1
		}
		return 0
	})
	for _, e := range all[:len(all)-keep] {
		delete(s.counts, e.h)
	}
}

// Pages returns the number of distinct pages observed.
func (s *Site) Pages() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages
}

// Count returns the number of pages a subtree hash was seen on.
func (s *Site) Count(h uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.counts[h])
}

// Len returns the number of counts kept.
func (s *Site) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.counts)
}

// siteMagic starts an encoded Site (WriteTo).
const siteMagic = "spider-site-1\n"

// WriteTo writes the site's counts (not its page fingerprints) in a compact
// binary form ReadFrom reads, in hash order (the same site gives the same
// bytes).
func (s *Site) WriteTo(w io.Writer) (int64, error) {
	s.mu.Lock()
	hashes := make([]uint64, 0, len(s.counts))
	for h := range s.counts {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	buf := make([]byte, 0, len(siteMagic)+20+13*len(hashes))
	buf = append(buf, siteMagic...)
	buf = binary.AppendUvarint(buf, uint64(s.pages))
	buf = binary.AppendUvarint(buf, uint64(len(hashes)))
	for _, h := range hashes {
		buf = binary.LittleEndian.AppendUint64(buf, h)
		buf = binary.AppendUvarint(buf, uint64(s.counts[h]))
	}
	s.mu.Unlock()
	n, err := w.Write(buf)
	return int64(n), err
}

// ErrBadSite reports an encoded site that does not decode.
var ErrBadSite = errors.New("not a site model")

// ReadSite reads a Site written by WriteTo, keeping at most opt.MaxHashes
// counts (the most frequent).
func ReadSite(b []byte, opt Options) (*Site, error) {
	s := NewSite(opt)
	if len(b) < len(siteMagic) || string(b[:len(siteMagic)]) != siteMagic {
		return nil, fmt.Errorf("cannot read site model: %w (no header); remove the file to start the site's model again", ErrBadSite)
	}
	b = b[len(siteMagic):]
	pages, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("cannot read site model: %w (page count); remove the file to start the site's model again", ErrBadSite)
	}
	b = b[k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("cannot read site model: %w (hash count); remove the file to start the site's model again", ErrBadSite)
	}
	b = b[k:]
	s.pages = int(min(pages, 1<<40))
	for range n {
		if len(b) < 9 {
			return nil, fmt.Errorf("cannot read site model: %w (truncated); remove the file to start the site's model again", ErrBadSite)
		}
		h := binary.LittleEndian.Uint64(b)
		c, k := binary.Uvarint(b[8:])
		if k <= 0 {
			return nil, fmt.Errorf("cannot read site model: %w (count); remove the file to start the site's model again", ErrBadSite)
		}
		b = b[8+k:]
		if len(s.counts) >= s.max {
			s.shrink()
		}
		s.counts[h] = uint32(min(c, uint64(^uint32(0))))
	}
	return s, nil
}

// Model holds the Sites of a crawl, at most Options.MaxSites of them (the
// least recently used is dropped first), and the options pages are
// extracted and classified with. Safe for concurrent use.
type Model struct {
	opt   Options
	mu    sync.Mutex
	sites map[string]*list.Element // of *siteEntry
	lru   *list.List               // most recent first
}

type siteEntry struct {
	key  string
	site *Site
}

// NewModel returns an empty model.
func NewModel(opt Options) *Model {
	return &Model{opt: opt.withDefaults(), sites: map[string]*list.Element{}, lru: list.New()}
}

// Options returns the model's options, defaults applied.
func (m *Model) Options() Options { return m.opt }

// Site returns the model of the site named key (a host name, say),
// creating it empty if needed.
func (m *Model) Site(key string) *Site {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.sites[key]; ok {
		m.lru.MoveToFront(e)
		return e.Value.(*siteEntry).site
	}
	if m.lru.Len() >= m.opt.MaxSites {
		last := m.lru.Back()
		m.lru.Remove(last)
		delete(m.sites, last.Value.(*siteEntry).key)
	}
	s := NewSite(m.opt)
	m.sites[key] = m.lru.PushFront(&siteEntry{key: key, site: s})
	return s
}

// Put makes s the model of the site named key (one read back with
// ReadSite, say).
func (m *Model) Put(key string, s *Site) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.sites[key]; ok {
		e.Value.(*siteEntry).site = s
		m.lru.MoveToFront(e)
		return
	}
	if m.lru.Len() >= m.opt.MaxSites {
		last := m.lru.Back()
		m.lru.Remove(last)
		delete(m.sites, last.Value.(*siteEntry).key)
	}
	m.sites[key] = m.lru.PushFront(&siteEntry{key: key, site: s})
}

// Sites returns the keys of the sites kept, most recently used first.
func (m *Model) Sites() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, m.lru.Len())
	for e := m.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*siteEntry).key)
	}
	return out
}

// Analyze is the online use at crawl time: it extracts the page, classifies
// it with what its site (the base URL's host) has seen before, then
// records it in the site.
func (m *Model) Analyze(base *url.URL, body []byte) (*Page, error) {
	p, err := Extract(base, body, m.opt)
	if err != nil {
		return nil, err
	}
	s := m.Site(base.Hostname())
	p.Classify(s, m.opt)
	s.Observe(p)
	return p, nil
}

// modelMagic starts an encoded Model (Model.WriteTo).
const modelMagic = "spider-sites-1\n"

// WriteTo writes every site of the model (ReadModel reads them back), in
// key order: the same model gives the same bytes.
func (m *Model) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	keys := make([]string, 0, len(m.sites))
	sites := map[string]*Site{}
	for k, e := range m.sites {
		keys = append(keys, k)
		sites[k] = e.Value.(*siteEntry).site
	}
	m.mu.Unlock()
	slices.Sort(keys)
	buf := []byte(modelMagic)
	buf = binary.AppendUvarint(buf, uint64(len(keys)))
	var sb bytesBuffer
	for _, k := range keys {
		sb = sb[:0]
		sites[k].WriteTo(&sb)
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendUvarint(buf, uint64(len(sb)))
		buf = append(buf, sb...)
	}
	n, err := w.Write(buf)
	return int64(n), err
}

// bytesBuffer is an io.Writer appending to itself.
type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// ReadModel reads a model written by Model.WriteTo, with opt (at most
// opt.MaxSites sites are kept: the last ones in key order win).
func ReadModel(b []byte, opt Options) (*Model, error) {
	m := NewModel(opt)
	bad := func(why string) (*Model, error) {
		return nil, fmt.Errorf("cannot read site models: %w (%s); remove the file to start the models again", ErrBadSite, why)
	}
	if len(b) < len(modelMagic) || string(b[:len(modelMagic)]) != modelMagic {
		return bad("no header")
	}
	b = b[len(modelMagic):]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return bad("site count")
	}
	b = b[k:]
	for range n {
		kl, k := binary.Uvarint(b)
		if k <= 0 || kl > uint64(len(b)-k) {
			return bad("key")
		}
		key := string(b[k : k+int(kl)])
		b = b[k+int(kl):]
		sl, k := binary.Uvarint(b)
		if k <= 0 || sl > uint64(len(b)-k) {
			return bad("site length")
		}
		s, err := ReadSite(b[k:k+int(sl)], m.opt)
		if err != nil {
			return nil, err
		}
		b = b[k+int(sl):]
		m.Put(key, s)
	}
	return m, nil
}
