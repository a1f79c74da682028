package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/websim"
)

// peerUA is the User-Agent every crawler sends: its product token "spider"
// selects the same robots.txt groups as spider's own default agent.
const peerUA = "spider/0.1 (+https://github.com/spider-crawler/spider)"

// errNotInstalled marks a crawler that cannot run on this machine (its
// runtime or package is missing); the harness skips it with a note.
var errNotInstalled = errors.New("not installed")

// prepared is one crawler ready to run: the command line prefix (program and
// fixed arguments) and a version string for the report.
type prepared struct {
	Argv    []string
	Version string
}

// prepare builds or locates every named crawler. A crawler that is not
// installed is left out of the returned map and described in skipped; any
// other failure (a build error) is returned.
func prepare(ctx context.Context, root, dir string, names []string) (map[string]prepared, []string, error) {
	out := map[string]prepared{}
	var skipped []string
	var spider *prepared // built once for spider, spider-p2p and spider-mw
	for _, name := range names {
		var p prepared
		var err error
		if slices.Contains(distCrawlers, name) {
			p, err = prepareDist(ctx, name, func() (prepared, error) {
				if spider == nil {
					sp, err := prepareOne(ctx, root, dir, "spider")
					if err != nil {
						return sp, err
					}
					spider = &sp
				}
				return *spider, nil
			})
		} else {
			p, err = prepareOne(ctx, root, dir, name)
			if name == "spider" && err == nil {
				spider = &p
			}
		}
		switch {
		case errors.Is(err, errNotInstalled):
			skipped = append(skipped, fmt.Sprintf("%s skipped: %v", name, err))
			continue
		case err != nil:
			return nil, nil, err
		}
		out[name] = p
	}
	return out, skipped, nil
}

func prepareOne(ctx context.Context, root, dir, name string) (prepared, error) {
	goBuild := func(pkgDir, target string) (string, error) {
		out := filepath.Join(dir, name)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, target)
		cmd.Dir = pkgDir
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("cannot build %s (go build in %s): %w\n%s", name, cmd.Dir, err, msg)
		}
		return out, nil
	}
	switch name {
	case "spider", "bare":
		bin, err := goBuild(root, "./"+map[string]string{"spider": "cmd/spider", "bare": "bench/bare"}[name])
		return prepared{Argv: []string{bin}, Version: "this tree, " + runtime.Version()}, err
	case "colly":
		modDir := filepath.Join(root, "bench", "peers", "colly")
		bin, err := goBuild(modDir, ".")
		return prepared{Argv: []string{bin}, Version: "gocolly/colly/v2 " + goModVersion(filepath.Join(modDir, "go.mod"), "github.com/gocolly/colly/v2")}, err
	case "crawlee":
		node, err := exec.LookPath("node")
		if err != nil {
			return prepared{}, fmt.Errorf("%w: node is not on PATH (Debian: apt-get install nodejs npm)", errNotInstalled)
		}
		pkgDir := filepath.Join(root, "bench", "peers", "crawlee")
		v, err := packageVersion(filepath.Join(pkgDir, "node_modules", "@crawlee", "cheerio", "package.json"))
		if err != nil {
			return prepared{}, fmt.Errorf("%w: @crawlee/cheerio is missing: run npm ci in %s", errNotInstalled, pkgDir)
		}
		return prepared{Argv: []string{node, filepath.Join(pkgDir, "main.mjs")},
			Version: "@crawlee/cheerio " + v + ", node " + firstLine(ctx, node, "--version")}, nil
	case "scrapy":
		py, v, err := findScrapy(ctx)
		if err != nil {
			return prepared{}, err
		}
		return prepared{Argv: []string{py, filepath.Join(root, "bench", "peers", "scrapy", "peer.py")}, Version: v}, nil
	case "wget", "wget2":
		bin, err := exec.LookPath(name)
		if err != nil {
			return prepared{}, fmt.Errorf("%w: %s is not on PATH (Debian: apt-get install %s)", errNotInstalled, name, name)
		}
		return prepared{Argv: []string{bin}, Version: firstLine(ctx, bin, "--version")}, nil
	}
	return prepared{}, fmt.Errorf("cannot prepare unknown crawler %q", name)
}

// findScrapy returns a Python interpreter that imports scrapy, preferring
// Debian's (python3-scrapy installs into /usr/bin/python3, which a pyenv or
// virtualenv python3 earlier on PATH would not see).
func findScrapy(ctx context.Context) (string, string, error) {
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, py := range cands {
		out, err := exec.CommandContext(ctx, py, "-c",
			"import scrapy, twisted, sys; print('scrapy', scrapy.__version__, '/ twisted', twisted.__version__, '/ python', sys.version.split()[0])").Output()
		if err == nil {
			return py, strings.TrimSpace(string(out)), nil
		}
	}
	return "", "", fmt.Errorf("%w: no python3 imports scrapy (Debian: apt-get install python3-scrapy)", errNotInstalled)
}

// firstLine runs prog with args and returns the first line of its output
// ("unknown" when it fails).
func firstLine(ctx context.Context, prog string, args ...string) string {
	out, err := exec.CommandContext(ctx, prog, args...).Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// goModVersion returns the version go.mod at path requires of module mod.
func goModVersion(path, mod string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(f) >= 2 && f[0] == mod {
			return f[1]
		}
	}
	return "unknown"
}

// packageVersion returns the "version" of an npm package.json.
func packageVersion(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Version == "" {
		return "", fmt.Errorf("cannot read the version in %s: %v", path, err)
	}
	return p.Version, nil
}

// okExit returns whether exit code is a normal end of crawler name: wget and
// wget2 exit 4 (network failure) or 8 (an error answer, e.g. a 404) after a
// complete crawl that met such pages.
func okExit(name string, code int) bool {
	switch name {
	case "wget", "wget2":
		return code == 0 || code == 4 || code == 8
	}
	return code == 0
}

// seconds formats d as decimal seconds, the unit Scrapy, Crawlee and wget take.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// crawlerArgs returns the arguments (after the prepared prefix) of one run of
// crawler name writing into data. proxy is websim's address: wget and wget2
// have no option to resolve a name to a given address (wget2 1.99 lacks
// --dns-cache-preload), so they use websim itself as their HTTP proxy; Go's
// server takes the absolute-form request line's host as the Host, so websim
// and its access log see the same host names.
func crawlerArgs(c config, name, data, resolve, proxy string, seeds []string) []string {
	sfx := websim.DefaultSuffixes()
	bare := make([]string, len(sfx)) // wget's --reject takes suffixes without the dot
	for i, s := range sfx {
		bare[i] = strings.TrimPrefix(s, ".")
	}
	depth := strconv.Itoa(c.Depth)
	if c.Depth < 0 {
		depth = "inf"
	}
	var a []string
	switch name {
	case "spider":
		a = []string{"crawl", "--data", data, "--delay", c.Delay.String(), "--per-host", strconv.Itoa(c.PerHost),
			"--concurrency", strconv.Itoa(c.Concurrency), "--allow-private", "--resolve-file", resolve,
			"--scope", "any", "--max-depth", strconv.Itoa(c.Depth), "--quiet",
			// The peers read no sitemaps and the truth follows links: websim's
			// /sitemap.xml lists every page of a host at depth 1.
			"--sitemaps=false"}
		a = append(a, c.SpiderArgs...)
	case "colly":
		a = []string{"--resolve-file", resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--parallelism", strconv.Itoa(c.Concurrency), "--delay", c.Delay.String(),
			"--suffixes", strings.Join(sfx, ",")}
	case "bare":
		a = []string{"--resolve-file", resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--parallelism", strconv.Itoa(c.Concurrency), "--suffixes", strings.Join(sfx, ",")}
	case "crawlee":
		a = []string{"--resolve-file", resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--concurrency", strconv.Itoa(c.Concurrency), "--delay", seconds(c.Delay),
			"--suffixes", strings.Join(sfx, ","), "--user-agent", peerUA}
	case "scrapy":
		a = []string{"--resolve-file", resolve, "--max-depth", strconv.Itoa(c.Depth),
			"--concurrency", strconv.Itoa(c.Concurrency), "--per-host", strconv.Itoa(c.PerHost),
			"--delay", seconds(c.Delay), "--suffixes", strings.Join(sfx, ","), "--user-agent", peerUA}
	case "wget":
		a = []string{"-e", "use_proxy=on", "-e", "http_proxy=http://" + proxy + "/", "-e", "robots=on",
			"--recursive", "--level", depth, "--span-hosts", "--delete-after", "--quiet", "--directory-prefix", data,
			"--user-agent", peerUA, "--reject", strings.Join(bare, ","), "--wait", seconds(c.Delay)}
	case "wget2":
		a = []string{"--http-proxy", "http://" + proxy + "/", "--robots=on",
			"--recursive", "--level", depth, "--span-hosts", "--delete-after", "--quiet", "--directory-prefix", data,
			"--user-agent", peerUA, "--reject", strings.Join(bare, ","), "--wait", seconds(c.Delay),
			"--max-threads", strconv.Itoa(c.Concurrency)}
	}
	return append(a, seeds...)
}

// crawlerEnv returns the environment of one run. Crawlee keeps its request
// queue under CRAWLEE_STORAGE_DIR; its default, persisting every request to
// disk, was 2.4× slower in a probe (299 pages: 23.9 s against 9.8 s), so it
// runs in memory (CRAWLEE_PERSIST_STORAGE=false): the faster setting a user
// would choose, which only strengthens a comparison spider wins.
func crawlerEnv(name, data string) []string {
	env := os.Environ()
	if name == "crawlee" {
		env = append(env, "CRAWLEE_STORAGE_DIR="+filepath.Join(data, "crawlee-storage"), "CRAWLEE_PERSIST_STORAGE=false")
	}
	return env
}

// peerNotes are the table notes on what each peer cannot be configured to do
// like spider; printReport prints those of the crawlers run.
var peerNotes = map[string]string{
	"spider":  "per-host connection limit; delay counted from the previous answer (default) or, with delay_from: start, from the server's latest possible arrival of the previous request; robots.txt; under a depth limit depth levels overlap and a page found later by a shorter path passes its links on again (the default), or are crawled in order with --strict-levels (seeds 0).",
	"colly":   "LimitRule{DomainGlob: \"*\"} is global: no per-host connection limit; its Delay is waited after each request, per rule, not per host.",
	"bare":    "no robots.txt, no politeness at all: the floor.",
	"crawlee": "no per-host connection limit (maxConcurrency is global); sameDomainDelaySecs is the per-domain gap; robots.txt via respectRobotsTxtFile (a 5xx robots.txt is treated as allow-all); request queue in memory (CRAWLEE_PERSIST_STORAGE=false).",
	"scrapy":  "CONCURRENT_REQUESTS_PER_DOMAIN is per host name (Scrapy's download slot), DOWNLOAD_DELAY start-to-start per slot; depth is that of the first path found (BFO order).",
	"wget":    "one connection in all (no parallelism); --wait is waited between every two requests of the whole crawl, not per host; uses websim as HTTP proxy (no --resolve).",
	"wget2":   "--max-threads is global: no per-host connection limit; --wait between requests of each thread; uses websim as HTTP proxy; HEADs URLs it rejects by suffix and follows sitemaps and rel=nofollow.",
	"spider-p2p": "--dist-nodes peer-to-peer nodes (spider crawl --redis --node-id nI) on one fresh redis-server, same seeds and rules each, --spider-args to every node; --concurrency split among the nodes (the total equals single-node spider's); " +
		"wall = first node start to last node exit; CPU = every node + redis-server; peak RSS = Σ each node's ru_maxrss + redis-server's VmHWM (an upper bound of the group's peak); depth levels overlap on each node (ordered within each node only with --strict-levels), and under a depth limit the buckets' Redis states relink (a page found later by a shorter path passes its links on again), so the limit keeps exactly the level-by-level pages.",
	"spider-mw": "spider master (the crawl rules, --spider-args, --concurrency as given) + --dist-nodes spider worker processes (only --data, --concurrency, --resolve-file, --allow-private) on one fresh redis-server; --concurrency split among the workers (the total equals single-node spider's); " +
		"wall = first process start to last exit; CPU = master + workers + redis-server; peak RSS = Σ each process's ru_maxrss + redis-server's VmHWM (an upper bound of the group's peak).",
}

// sortedKeys returns m's keys sorted.
func sortedKeys[V any](m map[string]V) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}
