package masterworker

import (
	"context"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/crawlstate"
	"github.com/spider-crawler/spider/internal/frontier"
)

// RetryState wraps the master's crawl state (the Redis state) so that a
// Redis restart or a brief outage is waited out (cluster.Retry: up to
// cluster.MaxOutage) instead of ending the crawl. Every wrapped call is
// safe to repeat: Discover and Complete are idempotent scripts (a URL
// already seen or no longer pending is left alone), so a call whose reply
// was lost and is sent again changes nothing twice, and with the Redis
// state the retry reuses the first run's reply-cache key (OneCall), so it
// returns what the first run accepted. LoadPending is not
// retried (it streams into the frontier; it only runs at start, where
// failing fast with a clear error is better).
func RetryState(st crawl.State) crawl.State { return retryState{st} }

type retryState struct{ crawl.State }

// oneCall keeps one reply-cache key across the retries of a call when the
// state is the Redis state (rstate.Store.OneCall).
func (r retryState) oneCall(ctx context.Context) context.Context {
	if s, ok := r.State.(interface {
		OneCall(context.Context) context.Context
	}); ok {
		return s.OneCall(ctx)
	}
	return ctx
}

func (r retryState) Discover(ctx context.Context, reqs []frontier.Request) (out []frontier.Request, err error) {
	cctx := r.oneCall(ctx)
	err = cluster.Retry(ctx, func() error { out, err = r.State.Discover(cctx, reqs); return err })
	return out, err
}

func (r retryState) Complete(ctx context.Context, req frontier.Request, o crawlstate.Outcome, discovered []frontier.Request) (res crawlstate.Result, err error) {
	cctx := r.oneCall(ctx)
	err = cluster.Retry(ctx, func() error { res, err = r.State.Complete(cctx, req, o, discovered); return err })
	return res, err
}

// Relinks passes the wrapped state's Relinks on (rstate.Store.Relinks),
// so that crawl.Scheduler gives Complete the links beyond the depth limit
// (crawl.Visit.Beyond) when the state keeps them.
func (r retryState) Relinks() bool {
	rl, ok := r.State.(interface{ Relinks() bool })
	return ok && rl.Relinks()
}

func (r retryState) UpdatePending(ctx context.Context, req frontier.Request) error {
	return cluster.Retry(ctx, func() error { return r.State.UpdatePending(ctx, req) })
}

func (r retryState) Current(ctx context.Context, req frontier.Request) (ok bool, err error) {
	err = cluster.Retry(ctx, func() error { ok, err = r.State.Current(ctx, req); return err })
	return ok, err
}

func (r retryState) Counters(ctx context.Context) (c map[string]int64, err error) {
	err = cluster.Retry(ctx, func() error { c, err = r.State.Counters(ctx); return err })
	return c, err
}
