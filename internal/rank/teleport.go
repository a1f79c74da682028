package rank

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spider-crawler/spider/internal/graph"
)

// TeleportPrefix returns the personalisation vector selecting, with equal
// weight, every page of g whose URL starts with prefix, and how many pages
// it selected. With no match the vector is nil and the count 0.
func TeleportPrefix(g *graph.Graph, prefix string) ([]float64, int) {
	t := make([]float64, g.N())
	n := 0
	for i, name := range g.Names {
		if strings.HasPrefix(name, prefix) {
			t[i] = 1
			n++
		}
	}
	if n == 0 {
		return nil, 0
	}
	return t, n
}

// TeleportURLs returns the personalisation vector selecting, with equal
// weight, the pages of g listed in r (one URL per line; blank lines and lines
// starting with # are ignored), the number of pages selected and the listed
// URLs that are not pages of g. It fails only when r cannot be read.
func TeleportURLs(g *graph.Graph, r io.Reader) (t []float64, selected int, missing []string, err error) {
	t = make([]float64, g.N())
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id := g.ID(line)
		if id < 0 {
			missing = append(missing, line)
			continue
		}
		if t[id] == 0 {
			t[id] = 1
			selected++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, nil, fmt.Errorf("cannot read the URL list: %w", err)
	}
	if selected == 0 {
		return nil, 0, missing, nil
	}
	return t, selected, missing, nil
}

// HostTeleport carries a page personalisation vector over to the host graph
// of the same crawl: each host gets the total weight of its selected pages.
// A nil page vector gives nil (uniform).
func HostTeleport(pages, hosts *graph.Graph, pageTele []float64) []float64 {
	if pageTele == nil {
		return nil
	}
	t := make([]float64, hosts.N())
	for i, w := range pageTele {
		if w == 0 {
			continue
		}
		if h := hosts.ID(graph.HostOf(pages.Names[i])); h >= 0 {
			t[h] += w
		}
	}
	return t
}

// Named maps the ranks of g's nodes to their names, ready for WriteScores.
func Named(g *graph.Graph, ranks []float64) map[string]float64 {
	m := make(map[string]float64, len(ranks))
	for i, r := range ranks {
		m[g.Names[i]] = r
	}
	return m
}
