package masterworker

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spider-crawler/spider/internal/cluster"
	"github.com/spider-crawler/spider/internal/crawl"
	"github.com/spider-crawler/spider/internal/frontier"
)

// Task is a packet on srq: one URL leased to whichever worker takes it.
type Task struct {
	Epoch   int64            `json:"epoch"`
	ID      uint64           `json:"id"` // lease id, unique within an epoch
	Request frontier.Request `json:"request"`
	// Schedule is Request.Schedule on the wire (the URL's revisit schedule
	// entry, whose validators the worker sends in a conditional GET): a
	// binary encoding, which a JSON string cannot hold (encoding/json
	// replaces bytes that are not UTF-8), so it travels as base64 and
	// Request.Schedule is empty in the packet. encodeTask and decodeTask
	// move it.
	Schedule []byte `json:"schedule,omitempty"`
}

// encodeTask is the packet of a task: the same bytes for the same task
// (the master finds a task's copies in the lists by value).
func encodeTask(epoch int64, id uint64, r frontier.Request) ([]byte, error) {
	t := Task{Epoch: epoch, ID: id, Request: r, Schedule: []byte(r.Schedule)}
	t.Request.Schedule = ""
	return json.Marshal(t)
}

// Result is a packet on nrq: what a worker made of a task.
type Result struct {
	Epoch  int64       `json:"epoch"`
	ID     uint64      `json:"id"`
	Worker int         `json:"worker"`
	Visit  crawl.Visit `json:"visit"`
	// RequestAge is how long before the worker sent the result its page
	// request started at the latest (Visit.RequestAfter on the worker's
	// clock); 0 if none was sent. Visit.RequestAfter alone counts from
	// when the worker took the task, which can be long after the master
	// leased it (the task waits in srq), so the master counts back from
	// the result's arrival instead: a start-to-start delay then begins no
	// earlier than the request really did.
	RequestAge time.Duration `json:"request_age,omitempty"`
	// GivenBack marks a task a worker abandoned after its Answered packet
	// (Worker.giveBackAnswered; Visit.Retry is set): the master queues it
	// again whether or not that packet has reached it yet.
	GivenBack bool `json:"given_back,omitempty"`
	// Schedules are the Schedule of Visit.Discovered's requests on the
	// wire, by index (a sitemap's revisit hints: changefreq, lastmod): a
	// binary encoding, base64 here as Task.Schedule is, and empty in the
	// requests. encodeResult and decodeResult move them.
	Schedules map[int][]byte `json:"schedules,omitempty"`
}

// encodeResult is the packet of r, the discovered requests' schedules
// moved to Result.Schedules (r's own slices are not changed).
func encodeResult(r Result) ([]byte, error) {
	for i, d := range r.Visit.Discovered {
		if d.Schedule == "" {
			continue
		}
		if r.Schedules == nil {
			r.Schedules = map[int][]byte{}
			r.Visit.Discovered = slices.Clone(r.Visit.Discovered)
		}
		r.Schedules[i] = []byte(d.Schedule)
		r.Visit.Discovered[i].Schedule = ""
	}
	return json.Marshal(r)
}

// maxPacket bounds a packet read from Redis, so a corrupt or hostile entry
// cannot make the master or a worker allocate without limit.
const maxPacket = 8 << 20

var errPacket = errors.New("malformed packet")

func decodeTask(b []byte) (Task, error) {
	var t Task
	if len(b) > maxPacket {
		return t, fmt.Errorf("%w: task of %d bytes", errPacket, len(b))
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("%w: %v", errPacket, err)
	}
	if t.Request.URL == "" || t.ID == 0 {
		return t, fmt.Errorf("%w: task without URL or id", errPacket)
	}
	if len(t.Schedule) > 0 {
		t.Request.Schedule, t.Schedule = string(t.Schedule), nil
	}
	return t, nil
}

func decodeResult(b []byte) (Result, error) {
	var r Result
	if len(b) > maxPacket {
		return r, fmt.Errorf("%w: result of %d bytes", errPacket, len(b))
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%w: %v", errPacket, err)
	}
	if r.ID == 0 || r.Visit.Outcome == "" && !r.Visit.Retry {
		return r, fmt.Errorf("%w: result without id or outcome", errPacket)
	}
	for _, d := range slices.Concat(r.Visit.Discovered, r.Visit.Beyond) {
		if d.URL == "" {
			return r, fmt.Errorf("%w: discovered link without URL", errPacket)
		}
	}
	for i, sch := range r.Schedules {
		if i < 0 || i >= len(r.Visit.Discovered) {
			return r, fmt.Errorf("%w: schedule of discovered link %d of %d", errPacket, i, len(r.Visit.Discovered))
		}
		r.Visit.Discovered[i].Schedule = string(sch)
	}
	r.Schedules = nil
	return r, nil
}

// Options are the settings shared by master and workers.
type Options struct {
	// Crawl names the crawl; several crawls share one Redis by name.
	Crawl string
	// Heartbeat is how often a worker reports it is alive (and how often the
	// master looks for dead ones). Default min(1s, WorkerTTL/3). Workers
	// use the interval the master publishes, so that it always fits the
	// master's WorkerTTL.
	Heartbeat time.Duration
	// WorkerTTL is how long a silent worker is trusted before the master
	// puts its tasks back. Default 5s.
	WorkerTTL time.Duration
	// MaxWorkers is the number of work numbers the master puts in trq.
	// Default 1024.
	MaxWorkers int
	// TaskTTL is how long a task may be out before the master queues it
	// again (a task lost in a Redis restart). Default: twice the fetch
	// time-out plus twice the host delay plus 30 s.
	TaskTTL time.Duration
	// Collectors is how many results the master applies to the crawl state
	// at once. Each result costs the master a few Redis round trips (the
	// state scripts); applying them one by one made the master the
	// bottleneck beyond two workers (pages/s grew 2.8× with 4 workers).
	// Default 16.
	Collectors int
	// NodeID names a worker in the crawl-wide report (cluster.NodeReport;
	// spider worker passes its data directory's store.NodeID, so a
	// restarted worker adds to its earlier figures). Default: "worker-"
	// and a random suffix. The master reports as ControlNode.
	NodeID string
	// ReportEvery is how often the master and workers publish their
	// report; 0 means cluster.ReportEvery.
	ReportEvery time.Duration
	// LeaveTimeout bounds how long a leaving worker (Worker.Leave) lets
	// its fetches in flight run before it abandons them. Default: the
	// crawl's fetch time-out (crawl.Fetcher.FetchTimeout).
	LeaveTimeout time.Duration
}

// MasterConns is how many Redis connections a master's own goroutines
// may hold at once: its Collectors appliers (each a state script at a
// time), the collector's blocking pop of nrq, the answer collector's of
// ans, the dispatcher, the reaper, the revisit feed, the crawl-wide
// reporter and the control follower. A
// master's client needs that many beyond go-redis's default pool (10 per
// CPU), or under load the reaper waits out the pool's time-out (4 s) for
// a connection and a dead worker's tasks are not taken back in that time
// (seen with 16 appliers on 2 CPUs: the default pool of 20).
func (o Options) MasterConns() int {
	c := o.Collectors
	if c <= 0 {
		c = defaultCollectors
	}
	return c + 7
}

// defaultCollectors is Options.Collectors' default.
const defaultCollectors = 16

func (o *Options) defaults() error {
	if o.Crawl == "" {
		return errors.New("no crawl name: pass --crawl NAME (the same on the master and every worker)")
	}
	if _, err := cluster.NewKeys(o.Crawl); err != nil {
		return err
	}
	if o.WorkerTTL == 0 {
		o.WorkerTTL = 5 * time.Second
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = min(time.Second, o.WorkerTTL/3)
	}
	if o.WorkerTTL <= o.Heartbeat {
		return fmt.Errorf("worker TTL %v must be longer than the heartbeat %v", o.WorkerTTL, o.Heartbeat)
	}
	if o.MaxWorkers == 0 {
		o.MaxWorkers = 1024
	}
	if o.Collectors <= 0 {
		o.Collectors = defaultCollectors
	}
	return nil
}
