package redisview

import (
	"context"
	"errors"
	"fmt"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/server"
)

var _ server.Controller = (*View)(nil)

// control returns the crawl's control word (cluster.Control).
func (v *View) control() (*cluster.Control, error) {
	k, err := cluster.NewKeys(v.crawl)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", server.ErrInvalid, err)
	}
	return cluster.NewControl(v.rdb, k), nil
}

// set writes state as the crawl's control word; every live node applies
// it within a second (spider control waits for their acks; the API does
// not: the dashboard shows the state the nodes report).
func (v *View) set(ctx context.Context, state string) error {
	c, err := v.control()
	if err != nil {
		return err
	}
	if _, err := c.Set(ctx, state); err != nil {
		return fmt.Errorf("%w: %w", server.ErrUnavailable, err)
	}
	return nil
}

// Pause implements server.Controller for a distributed crawl: no node starts a
// new fetch (a master hands out nothing); fetches in flight finish.
func (v *View) Pause(ctx context.Context) error { return v.set(ctx, cluster.ControlPaused) }

// Resume implements server.Controller.
func (v *View) Resume(ctx context.Context) error { return v.set(ctx, cluster.ControlRunning) }

// Stop implements server.Controller: every node finishes its fetches in flight
// and exits; what is pending stays pending, the next run resumes it.
func (v *View) Stop(ctx context.Context) error { return v.set(ctx, cluster.ControlStopping) }

// AddSeeds implements server.Controller: the URLs are queued for the crawl's
// nodes, which record them as discovered under the crawl's rules. It
// returns how many were queued (whether each is new is known only to the
// node that owns it). Every URL must be an absolute http(s) URL; otherwise
// nothing is queued and the error wraps server.ErrInvalid.
func (v *View) AddSeeds(ctx context.Context, urls []string) (int, error) {
	for _, s := range urls {
		if err := server.CheckSeed(s); err != nil {
			return 0, err
		}
	}
	c, err := v.control()
	if err != nil {
		return 0, err
	}
	if _, err := c.AddSeeds(ctx, urls); err != nil {
		return 0, fmt.Errorf("%w: %w", server.ErrUnavailable, err)
	}
	return len(urls), nil
}

// controlState maps a running crawl's state to the control word's
// (paused, stopping); other states and an unreadable word are kept.
func (v *View) controlState(ctx context.Context, state string) string {
	if state != "running" {
		return state
	}
	c, err := v.control()
	if err != nil {
		return state
	}
	cmd, err := c.Get(ctx)
	if err != nil && !errors.Is(err, context.Canceled) {
		return state
	}
	switch cmd.State {
	case cluster.ControlPaused:
		return "paused"
	case cluster.ControlStopping:
		return "stopping"
	}
	return state
}
