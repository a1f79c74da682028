package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// topicSite is one topic of the cluster experiment: the websim domains that
// make its sites and the first-byte latency of every one of their hosts.
type topicSite struct {
	Name     string
	Priority int
	Domains  []int         // websim domains dD.test
	Latency  time.Duration // first-byte delay of each of its hosts
	Terms    websim.Topic  // the websim topic whose words are its terms
}

// The cluster web: 64 hosts in 16 domains (4 hosts a domain: www.dD,
// dD, blog.dD, news.dD), 2000 pages a host. The topics differ in size (4,
// 12 and 32 hosts) and latency (fast, medium, slow), so a crawler that
// serves hosts in turn (FIFO) gives each topic pages in proportion to its
// hosts, the most to the slow, large one. Domains 12–15 are in no topic
// and have no seed (out of scope).
const (
	clusterHosts   = 64
	clusterDomains = 16
	clusterPages   = 2000
)

var clusterTopics = []topicSite{
	{Name: "alpha", Priority: 2, Domains: []int{0}, Latency: 10 * time.Millisecond, Terms: websim.TopicTax},
	{Name: "beta", Priority: 1, Domains: []int{4, 5, 6, 7, 8, 9, 10, 11}, Latency: 200 * time.Millisecond, Terms: websim.TopicFinance},
	{Name: "gamma", Priority: 0, Domains: []int{1, 2, 3}, Latency: 60 * time.Millisecond, Terms: websim.TopicSports},
}

// clusterWeb is websim on loopback with a first-byte latency per topic
// (websim's own latency knob is one for every host): its handler sleeps the
// latency of the request's host's topic, then serves the page. The access
// log is websim's (an entry's Time is after the sleep: when the page's
// answer began).
type clusterWeb struct {
	*websim.Web
	srv      *http.Server
	ln       net.Listener
	topicOf  map[string]string        // host name → topic ("" for none)
	latency  map[string]time.Duration // host name → its latency
	resolveF string                   // the --resolve-file of the spider processes
}

// startClusterWeb starts the cluster web on a free loopback port and writes
// its resolve file into dir; accessLog, when not nil, gets every access-log
// entry as a JSON line.
func startClusterWeb(ctx context.Context, dir string, seed int64, accessLog io.Writer) (*clusterWeb, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("cannot listen for websim: %w", err)
	}
	web, err := websim.New(websim.Config{Seed: seed, Hosts: clusterHosts, Domains: clusterDomains, PagesPerHost: clusterPages,
		LogWriter: accessLog, Port: ln.Addr().(*net.TCPAddr).Port})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("cannot build the websim web: %w", err)
	}
	w := &clusterWeb{Web: web, ln: ln, topicOf: map[string]string{}, latency: map[string]time.Duration{}}
	for _, h := range web.Hosts() {
		for _, t := range clusterTopics {
			for _, d := range t.Domains {
				if web.Domain(h) == fmt.Sprintf("d%d.test", d) {
					w.topicOf[h] = t.Name
					w.latency[h] = t.Latency
				}
			}
		}
	}
	w.resolveF = filepath.Join(dir, "resolve.txt")
	if err := os.WriteFile(w.resolveF, []byte(strings.Join(web.Resolve(), "\n")+"\n"), 0o644); err != nil {
		ln.Close()
		return nil, fmt.Errorf("cannot write the resolve file: %w", err)
	}
	inner := web.Handler()
	w.srv = &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host := r.Host
		if i := strings.LastIndexByte(host, ':'); i >= 0 {
			host = host[:i]
		}
		if d := w.latency[strings.ToLower(host)]; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		inner.ServeHTTP(rw, r)
	})}
	go func() {
		if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "topics bench: websim stopped:", err)
		}
	}()
	return w, nil
}

// seeds returns the index page of every host of topic t.
func (w *clusterWeb) seeds(t topicSite) []string {
	var out []string
	for _, h := range w.Hosts() {
		if w.topicOf[h] == t.Name {
			out = append(out, w.URL(h, "/"))
		}
	}
	return out
}

// topicOfHost classifies a host ("" for no topic).
func (w *clusterWeb) topicOfHost(host string) string { return w.topicOf[strings.ToLower(host)] }

func (w *clusterWeb) Close() error { return w.srv.Close() }
