package websim

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// host is the precomputed, per-host part of the model (O(1) memory per host).
type host struct {
	name     string // e.g. "www.d0.test"
	origin   string // "http://www.d0.test:PORT"
	domain   int32
	topic    Topic
	zh       bool
	troubled bool
	slow     bool
	robots   RobotsKind
}

// Web is a synthetic web: the model, its HTTP handler, its access log and its ground
// truth. It is safe for concurrent use. Create it with New (or Start, which also serves
// it).
type Web struct {
	cfg    settings
	shape  shape
	hosts  []host
	byName map[string]int32

	pageZipf zipf // page ids of one host
	hostZipf zipf // host ranks
	permMul  uint64
	permAdd  uint64

	log    *AccessLog
	busy   busyCounter
	done   chan struct{}
	stop   sync.Once
	active sync.WaitGroup // requests being served

	bufs sync.Pool // *[]byte page buffers

	bombOnce  sync.Once
	bomb      []byte
	largeOnce sync.Once
	large     []byte // a chunk of paragraphs repeated to pad large pages
	hugeOnce  sync.Once
	huge      []byte // the filler of huge robots.txt files

	start time.Time // when New built the web: the origin of PublishEvery

	answers atomic.Uint64 // answers of FaultETagEveryAnswer hosts (change.go)
}

// New builds the web described by cfg. It holds O(Hosts + PagesPerHost) memory; pages are
// generated on request. It returns an error wrapping ErrBadConfig when a field is out of
// range.
func New(cfg Config) (*Web, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	w := &Web{
		cfg:      s,
		shape:    newShape(s.PagesPerHost),
		hosts:    make([]host, s.Hosts),
		byName:   make(map[string]int32, s.Hosts),
		pageZipf: newZipf(s.PagesPerHost, 1.1),
		hostZipf: newZipf(s.Hosts, 1.0),
		done:     make(chan struct{}),
	}
	w.log = newAccessLog(s.LogCap, s.LogWriter, s.Logger)
	w.start = time.Now()
	w.busy.init(100_000)
	seed := uint64(s.Seed)
	// A seed-dependent permutation of host ranks: rank r ↦ (r*mul + add) mod Hosts.
	n := uint64(s.Hosts)
	w.permMul = 1
	if n > 2 {
		w.permMul = mix(seed^keyPerm)%(n-1) + 1
		for gcd(w.permMul, n) != 1 {
			w.permMul = w.permMul%(n-1) + 1
		}
	}
	w.permAdd = mix(seed^keyPerm+1) % n
	menu := robotsMenu()
	for i := range w.hosts {
		h := &w.hosts[i]
		h.name = hostName(i, s.Domains)
		h.origin = "http://" + h.name
		if s.Port != 0 {
			h.origin += ":" + strconv.Itoa(s.Port)
		}
		h.domain = int32(i % s.Domains)
		k := hash2(seed, keyHost<<32|uint64(i))
		h.topic = Topic(k % uint64(numTopics))
		h.zh = unit(mix(k^1)) < s.ChineseShare
		h.troubled = unit(mix(k^2)) < s.TroubleShare
		h.slow = s.features.Has(FeatureSlow) && unit(mix(k^3)) < s.SlowShare
		switch {
		case s.robots >= 0:
			h.robots = s.robots
		case s.features.Has(FeatureRobots):
			h.robots = menu[mix(k^4)%uint64(len(menu))]
		default:
			h.robots = RobotsAllowAll
		}
		w.byName[h.name] = int32(i)
	}
	return w, nil
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// hostName names host i of a web with the given number of registrable domains.
func hostName(i, domains int) string {
	d := strconv.Itoa(i % domains)
	switch i / domains {
	case 0:
		return "www.d" + d + ".test"
	case 1:
		return "d" + d + ".test"
	case 2:
		return "blog.d" + d + ".test"
	case 3:
		return "news.d" + d + ".test"
	}
	return "site" + strconv.Itoa(i) + ".d" + d + ".test"
}

// Features returns the behaviours enabled in this web.
func (w *Web) Features() Feature { return w.cfg.features }

// Config returns the configuration with every default applied (Profile resolved,
// Enable/Disable left as given).
func (w *Web) Config() Config { return w.cfg.Config }

// Port returns the port written in generated URLs (0: none).
func (w *Web) Port() int { return w.cfg.Port }

// Hosts returns the host names in host order (host 0 first). The caller owns the slice.
func (w *Web) Hosts() []string {
	out := make([]string, len(w.hosts))
	for i := range w.hosts {
		out[i] = w.hosts[i].name
	}
	return out
}

// Domain returns the registrable domain of a host of this web ("d3.test"), or "" for a
// name that is not one of its hosts.
func (w *Web) Domain(hostname string) string {
	i, ok := w.lookup(hostname)
	if !ok {
		return ""
	}
	return "d" + strconv.Itoa(int(w.hosts[i].domain)) + ".test"
}

// lookup finds a host by name (case-insensitive, port ignored).
func (w *Web) lookup(hostport string) (int, bool) {
	name := hostport
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.Contains(name[i:], "]") {
		name = name[:i]
	}
	name = strings.TrimSuffix(name, ".")
	if i, ok := w.byName[name]; ok {
		return int(i), true
	}
	i, ok := w.byName[strings.ToLower(name)]
	return int(i), ok
}

// URL returns the absolute URL of path on host (path must start with "/"), with the
// web's port.
func (w *Web) URL(hostname, path string) string {
	if i, ok := w.lookup(hostname); ok {
		return w.hosts[i].origin + path
	}
	u := "http://" + strings.ToLower(hostname)
	if w.cfg.Port != 0 {
		u += ":" + strconv.Itoa(w.cfg.Port)
	}
	return u + path
}

// SeedURLs returns the index URLs of the first n hosts (n is capped at the number of
// hosts); host 0 is www.d0.test.
func (w *Web) SeedURLs(n int) []string {
	n = max(0, min(n, len(w.hosts)))
	out := make([]string, n)
	for i := range out {
		out[i] = w.hosts[i].origin + "/"
	}
	return out
}

// HostAddr returns the loopback address of host i in PerIP mode: 127.A.B.C, distinct for
// every host, never 127.0.0.1 and never with C = 0 or 255.
func HostAddr(i int) netip.Addr {
	n := i + 1 // skip 127.0.0.1
	c := n%254 + 1
	rest := n / 254
	return netip.AddrFrom4([4]byte{127, byte(rest >> 8), byte(rest), byte(c)})
}

// addrOf returns the address clients must use for host i.
func (w *Web) addrOf(i int) netip.Addr {
	if w.cfg.PerIP {
		return HostAddr(i)
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// Resolve returns one curl-style "HOST:PORT:ADDR" entry per host, in host order.
func (w *Web) Resolve() []string {
	out := make([]string, len(w.hosts))
	for i := range w.hosts {
		out[i] = fmt.Sprintf("%s:%d:%s", w.hosts[i].name, w.cfg.Port, w.addrOf(i))
	}
	return out
}

// Log returns the web's access log.
func (w *Web) Log() *AccessLog { return w.log }

// shutdown ends every hanging request; it is idempotent.
func (w *Web) shutdown() { w.stop.Do(func() { close(w.done) }) }

// pickHost returns a Zipf-popular host other than self (self when there is only one).
func (w *Web) pickHost(r *rng, self int) int {
	n := len(w.hosts)
	if n == 1 {
		return 0
	}
	for range 4 {
		t := int((uint64(w.hostZipf.sample(r))*w.permMul + w.permAdd) % uint64(n))
		if t != self {
			return t
		}
	}
	return (self + 1) % n
}
