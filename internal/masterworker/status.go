package masterworker

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Status is a master–worker crawl as seen in Redis.
type Status struct {
	Crawl   string           `json:"crawl"`
	Done    bool             `json:"done"`
	SRQ     int64            `json:"srq"` // tasks waiting for a worker: the shared queue and, in a topics crawl, every crawl node's own queue (srq:N)
	NRQ     int64            `json:"nrq"` // results waiting for the master
	FreeTRQ int64            `json:"trq"` // free work numbers
	Workers []WorkerStatus   `json:"workers"`
	Master  map[string]int64 `json:"master"` // the master's last published progress
}

// WorkerStatus is one live (or not yet reaped) worker.
type WorkerStatus struct {
	ID       int           `json:"id"`
	LastBeat time.Duration `json:"last_beat_ago"`
	InFlight int64         `json:"in_flight"`
	// Queued are the tasks waiting in the worker's own queue (srq:N): only
	// a topics crawl's nodes have one; 0 otherwise.
	Queued int64 `json:"queued"`
}

// ReadStatus reads the crawl's queues, workers and the master's progress.
func ReadStatus(ctx context.Context, rdb redis.UniversalClient, crawl string) (*Status, error) {
	k := newKeys(crawl)
	st := &Status{Crawl: crawl, Master: map[string]int64{}}
	pipe := rdb.Pipeline()
	srq, nrq, trq := pipe.LLen(ctx, k.srq()), pipe.LLen(ctx, k.nrq()), pipe.LLen(ctx, k.trq())
	done := pipe.Exists(ctx, k.done())
	beats := pipe.HGetAll(ctx, k.workers())
	stats := pipe.HGetAll(ctx, k.stats())
	now := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("cannot read the crawl's status from Redis: %w", err)
	}
	st.SRQ, st.NRQ, st.FreeTRQ, st.Done = srq.Val(), nrq.Val(), trq.Val(), done.Val() > 0
	for key, v := range stats.Val() {
		n, _ := strconv.ParseInt(v, 10, 64)
		st.Master[key] = n
	}
	for w, ms := range beats.Val() {
		id, err := strconv.Atoi(w)
		last, err2 := strconv.ParseInt(ms, 10, 64)
		if err != nil || err2 != nil {
			continue
		}
		n, _ := rdb.LLen(ctx, k.processing(id)).Result()
		q, _ := rdb.LLen(ctx, k.srqOf(id)).Result()
		st.SRQ += q
		st.Workers = append(st.Workers, WorkerStatus{ID: id, LastBeat: now.Val().Sub(time.UnixMilli(last)).Round(time.Millisecond), InFlight: n, Queued: q})
	}
	sort.Slice(st.Workers, func(i, j int) bool { return st.Workers[i].ID < st.Workers[j].ID })
	return st, nil
}
