package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/bench/internal/redisproc"
)

// redisServer is a redis-server process owned by the benchmark
// (bench/internal/redisproc), with the short names this file uses.
type redisServer struct {
	*redisproc.Server
	rdb  *redis.Client
	addr string
}

// startRedis starts redis-server on a free loopback port in dir.
func startRedis(ctx context.Context, dir string) (*redisServer, error) {
	s, err := redisproc.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	return &redisServer{Server: s, rdb: s.Client, addr: s.Addr}, nil
}

// close shuts the server down and waits for it.
func (s *redisServer) close() { s.Close() }

// url is the server's address as the spider flags take it.
func (s *redisServer) url() string { return s.URL() }

// pid is the server's process id.
func (s *redisServer) pid() int { return s.PID() }

// reset empties the server and its statistics between runs.
func (s *redisServer) reset(ctx context.Context) error {
	if err := s.rdb.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("cannot flush Redis: %w", err)
	}
	if err := s.rdb.ConfigResetStat(ctx).Err(); err != nil {
		return fmt.Errorf("cannot reset the Redis statistics: %w", err)
	}
	return nil
}

// info reads INFO of the given sections, parsed.
func (s *redisServer) info(ctx context.Context, sections ...string) (redisInfo, error) {
	raw, err := s.rdb.Info(ctx, sections...).Result()
	if err != nil {
		return nil, fmt.Errorf("cannot read Redis INFO: %w", err)
	}
	return parseInfo(raw)
}

// redisInfo is INFO's "field:value" lines; commandstats lines keep their
// raw value ("calls=3,usec=…").
type redisInfo map[string]string

var errBadInfo = errors.New("bad INFO line")

// parseInfo parses the text of INFO: "# Section" headers, empty lines and
// "field:value" lines. A line without a colon is an error.
func parseInfo(raw string) (redisInfo, error) {
	out := redisInfo{}
	sc := bufio.NewScanner(strings.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w %d: %q has no field:value", errBadInfo, n, line)
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read INFO: %w", err)
	}
	return out, nil
}

// int returns a numeric field (0 when absent or not a number).
func (in redisInfo) int(field string) int64 {
	v, err := strconv.ParseInt(in[field], 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(in[field], 64)
		if ferr != nil {
			return 0
		}
		return int64(f)
	}
	return v
}

// float returns a floating-point field (0 when absent or not a number).
func (in redisInfo) float(field string) float64 {
	f, _ := strconv.ParseFloat(in[field], 64)
	return f
}

// commandCalls returns the calls of each command from the commandstats
// section ("cmdstat_get:calls=3,usec=…"), keyed by command name.
func (in redisInfo) commandCalls() (map[string]int64, error) {
	out := map[string]int64{}
	for k, v := range in {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		found := false
		for part := range strings.SplitSeq(v, ",") {
			f, val, ok := strings.Cut(part, "=")
			if ok && f == "calls" {
				c, err := strconv.ParseInt(val, 10, 64)
				if err != nil || c < 0 {
					return nil, fmt.Errorf("%w: %s has calls=%q", errBadInfo, k, val)
				}
				out[name] = c
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %s has no calls=", errBadInfo, k)
		}
	}
	return out, nil
}

// benchCommands are the commands the benchmark itself sends while a run is
// measured; they are left out of the crawl's command counts.
var benchCommands = map[string]bool{"info": true, "config|resetstat": true, "flushall": true, "ping": true}

// crawlCalls sums the calls of every command except the benchmark's own,
// and lists the busiest commands.
func crawlCalls(calls map[string]int64) (total int64, top []cmdCount) {
	for name, c := range calls {
		if benchCommands[name] {
			continue
		}
		total += c
		top = append(top, cmdCount{name, c})
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].calls != top[j].calls {
			return top[i].calls > top[j].calls
		}
		return top[i].name < top[j].name
	})
	return total, top
}

// cmdCount is one command's number of calls.
type cmdCount struct {
	name  string
	calls int64
}
