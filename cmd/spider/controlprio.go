package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/topics"
)

// spider control priority TOPIC N: a topic's priority changed while a
// topic-focused crawl runs (design §4). Two ways to reach the crawl:
//
//   - --redis URL --crawl NAME: a topics crawl on a cluster (spider master
//     --topics). The override is written to Redis (masterworker
//     .SetTopicPriority); the coordinator applies it at its next daemon tick
//     and saves it in its task records. The command then waits up to --wait
//     for the coordinator's published status to show it.
//   - --addr HOST:PORT: a crawl running in one process with its HTTP server
//     (spider crawl --topics --addr, or spider serve --redis): the command
//     calls PUT /api/topics/TOPIC/priority with the control token
//     (--token-file or $SPIDER_TOKEN); the engine applies it at the next URL
//     it hands out.
//
// Exit codes: 0 the change is recorded; 2 bad input (an unknown topic,
// named with the crawl's topics; a priority outside 0..9; a crawl without
// topics; a missing or refused token); 1 the crawl refused it (it has
// finished); 3 Redis or the server cannot be reached.

// parsePriorityArgs checks TOPIC N.
func parsePriorityArgs(rest []string) (topic string, p int, err error) {
	if len(rest) != 2 {
		return "", 0, fmt.Errorf("%w: priority takes a topic and a number: spider control priority TOPIC 0..%d", errUsage, topics.MaxPriority)
	}
	p, err = strconv.Atoi(rest[1])
	if err != nil || topics.CheckPriority(p) != nil {
		return "", 0, fmt.Errorf("%w: priority %q: give a whole number from 0 (lowest) to %d", errUsage, rest[1], topics.MaxPriority)
	}
	return rest[0], p, nil
}

// topicUsage makes the priority errors that are the user's to fix usage
// errors (exit 2).
func topicUsage(err error) error {
	if errors.Is(err, topics.ErrUnknownTopic) || errors.Is(err, topics.ErrPriorityRange) || errors.Is(err, masterworker.ErrNotTopics) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

// controlPriorityRedis records the priority of topic in the crawl and waits
// up to wait for the coordinator's status to show it.
func controlPriorityRedis(ctx context.Context, rf *redisFlags, topic string, p int, wait time.Duration, stdout io.Writer) error {
	rdb, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	c, err := findCrawl(ctx, rdb, rf)
	if err != nil {
		return err
	}
	if err := masterworker.SetTopicPriority(ctx, rdb, c.Name, topic, p); err != nil {
		if uerr := topicUsage(err); errors.Is(uerr, errUsage) {
			return uerr
		}
		return rf.lost(err)
	}
	fmt.Fprintf(stdout, "crawl %q: topic %s priority %d recorded; the coordinator applies it at its next tick and keeps it across restarts\n", c.Name, topic, p)
	start := time.Now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		st, ok, err := masterworker.ReadTopicStatus(ctx, rdb, c.Name)
		if err != nil {
			return rf.lost(err)
		}
		if ok && topicPriority(st.Status, topic) == p {
			fmt.Fprintf(stdout, "applied: the coordinator's status shows priority %d (after %s)\n", p, time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			fmt.Fprintf(stdout, "not yet in the coordinator's status after %s: it applies the change at its next tick while it runs (spider status --crawl %s shows it)\n", wait, c.Name)
			return nil
		case <-tick.C:
		}
	}
}

// topicPriority is the priority st shows for topic, -1 when it has none.
func topicPriority(st topics.Status, topic string) int {
	for _, t := range st.Tasks {
		if t.Name == topic && t.Granularity == topics.GranularityTopic.String() {
			return t.Priority
		}
	}
	return -1
}

// controlPriorityHTTP asks the HTTP server at addr (HOST:PORT or a URL) to
// change the priority: PUT /api/topics/TOPIC/priority with the token.
func controlPriorityHTTP(ctx context.Context, addr, tokenFile, topic string, p int, timeout time.Duration, stdout io.Writer) error {
	token, err := loadToken(tokenFile)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if token == "" {
		return fmt.Errorf("%w: the control API needs the crawl's token: set SPIDER_TOKEN or pass --token-file (the one the crawl was started with)", errUsage)
	}
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: --addr %q: give HOST:PORT (the crawl's --addr) or http(s)://HOST:PORT", errUsage, addr)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/topics/" + url.PathEscape(topic) + "/priority"
	body, _ := json.Marshal(map[string]int{"priority": p})
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPut, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return resourceError{fmt.Errorf("cannot reach the crawl's server at %s (is it running with --addr %s?): %w", u.Host, u.Host, err)}
	}
	defer resp.Body.Close()
	var ans struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&ans)
	msg := ans.Error
	if msg == "" {
		msg = resp.Status
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		fmt.Fprintf(stdout, "topic %s priority %d: applied by the crawl at %s (from its next URL; saved in its task records)\n", topic, p, u.Host)
		return nil
	case resp.StatusCode == http.StatusBadRequest, resp.StatusCode == http.StatusNotImplemented,
		resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s", errUsage, msg)
	case resp.StatusCode == http.StatusServiceUnavailable:
		return resourceError{fmt.Errorf("the crawl's server at %s: %s", u.Host, msg)}
	}
	return fmt.Errorf("the crawl's server at %s refused: %s", u.Host, msg)
}
