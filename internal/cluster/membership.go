package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spider-crawler/spider/internal/partition"
)

// Default timings of MembershipConfig.
const (
	DefaultHeartbeat = time.Second
	DefaultMemberTTL = 5 * time.Second
)

// Errors of Membership.
var (
	// ErrNotJoined: Leave, or a heartbeat-dependent call, on a membership that has not
	// joined.
	ErrNotJoined = errors.New("not joined")
	// ErrJoined: Join on a membership that is already joined.
	ErrJoined = errors.New("already joined")
	// ErrNodeIDInUse is wrapped by Join, and sent on Membership.Taken, when another
	// live member (fresh heartbeat, another Instance) holds the ID: see IDInUseError.
	ErrNodeIDInUse = errors.New("node id is in use by a live node")
)

// DefaultIDHint is IDInUseError's advice when MembershipConfig.IDHint is empty: the
// words for a peer-to-peer node (spider crawl --redis).
const DefaultIDHint = "give each node its own --node-id, or leave --node-id unset to use the one kept in the data directory"

// IDInUseError says that a member ID is held by another live process. It matches
// ErrNodeIDInUse with errors.Is.
type IDInUseError struct {
	// ID is the member ID both claim.
	ID string
	// Holder is the live member's record (PID and Host say which process it is, if it
	// published them).
	Holder Member
	// LastSeen is how long ago the holder's last heartbeat was (Redis server clock).
	LastSeen time.Duration
	// Hint says what to do (MembershipConfig.IDHint).
	Hint string
}

func (e *IDInUseError) Error() string {
	who := "pid ?"
	if e.Holder.PID > 0 {
		who = fmt.Sprintf("pid %d", e.Holder.PID)
	}
	if e.Holder.Host != "" {
		who += " on host " + e.Holder.Host
	}
	hint := e.Hint
	if hint == "" {
		hint = DefaultIDHint
	}
	return fmt.Sprintf("node id %q is in use by a live node (%s, last seen %.1fs ago): %s",
		e.ID, who, max(e.LastSeen, 0).Seconds(), hint)
}

// Is makes errors.Is(err, ErrNodeIDInUse) hold.
func (e *IDInUseError) Is(target error) bool { return target == ErrNodeIDInUse }

// Load is what a member publishes about its work (SPEC §4: the coordinating node collects
// each node's load); it travels with every heartbeat.
type Load struct {
	// PagesPerSec is the member's recent fetch rate.
	PagesPerSec float64 `json:"pages_per_s"`
	// Queue is the number of URLs waiting in the member's buckets.
	Queue int64 `json:"queue"`
	// Fetched is the number of URLs the member fetched in this run.
	Fetched int64 `json:"fetched"`
}

// Member is one node of the crawl as seen in Redis.
type Member struct {
	// ID names the node (see CheckNodeID); unique in the crawl.
	ID string `json:"id"`
	// Weight is the node's share of buckets in ring units (≥ 1).
	Weight int `json:"weight"`
	// Addr is where other nodes reach the node (its URL receiver), if anywhere.
	Addr string `json:"addr,omitempty"`
	// Meta carries free-form facts (version, host name, roles).
	Meta map[string]string `json:"meta,omitempty"`
	// Load is the member's last published load.
	Load Load `json:"load"`
	// Instance tells one process (or one data directory's line of processes) from
	// another claiming the same ID: Join refuses an ID whose live holder has another
	// non-empty Instance (ErrNodeIDInUse) and takes it over when the Instance is the
	// same (a node restarted at once on its data directory, see store.NodeToken).
	// Empty in Join: a random one per Membership. Never shown to users.
	Instance string `json:"instance,omitempty"`
	// PID and Host name the member's process for messages (IDInUseError); Join fills
	// in this process's when zero.
	PID  int    `json:"pid,omitempty"`
	Host string `json:"host,omitempty"`
	// TTLMillis is the member's TTL in milliseconds (set by Join): the time of its last
	// heartbeat is Deadline less this.
	TTLMillis int64 `json:"ttl_ms,omitempty"`
	// Deadline is when the member expires without a new heartbeat (Redis server clock);
	// set by Members, ignored by Join.
	Deadline time.Time `json:"-"`
}

// View is the live member list at one epoch.
type View struct {
	// Epoch increases on every change of the member list (join, leave, expiry, weight
	// change); two views with the same epoch list the same members and weights.
	Epoch int64
	// Members are sorted by ID.
	Members []Member
}

// Has reports whether the view lists id.
func (v View) Has(id string) bool {
	_, ok := slices.BinarySearchFunc(v.Members, id, func(m Member, id string) int { return strings.Compare(m.ID, id) })
	return ok
}

// Ring builds the consistent-hash ring of the view's members and weights. It returns
// partition.ErrNoMembers for an empty view.
func (v View) Ring(opts ...partition.RingOption) (*partition.Ring, error) {
	ms := make([]partition.Member, len(v.Members))
	for i, m := range v.Members {
		ms[i] = partition.Member{ID: m.ID, Weight: m.Weight}
	}
	return partition.NewRing(ms, opts...)
}

// MembershipConfig tunes a Membership. The zero value works.
type MembershipConfig struct {
	// Heartbeat is the interval between heartbeats. Default DefaultHeartbeat (1 s).
	Heartbeat time.Duration
	// TTL is how long a member stays listed after its last heartbeat. Default
	// DefaultMemberTTL (5 s); raised to 2·Heartbeat if smaller.
	TTL time.Duration
	// Poll is how often Watch re-reads the member list (it also wakes on every change
	// published by another member). Default Heartbeat.
	Poll time.Duration
	// Logger receives heartbeat failures and re-registrations; nil discards.
	Logger *slog.Logger
	// IDHint is the advice of an IDInUseError (what the user should change). Default
	// DefaultIDHint.
	IDHint string
}

func (c MembershipConfig) withDefaults() MembershipConfig {
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.TTL <= 0 {
		c.TTL = DefaultMemberTTL
	}
	c.TTL = max(c.TTL, 2*c.Heartbeat)
	if c.Poll <= 0 {
		c.Poll = c.Heartbeat
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Membership registers this node in a crawl's member list, keeps it alive with
// heartbeats and reads the list of live members. Deadlines use the Redis server's clock;
// a member whose heartbeats stop is removed, atomically, by the first node that reads the
// list after its deadline. Safe for concurrent use.
type Membership struct {
	rdb  redis.UniversalClient
	keys Keys
	cfg  MembershipConfig

	mu       sync.Mutex
	self     Member
	instance string // the random Instance used when Join's is empty
	joined   bool
	joinedAt time.Time // when Join registered self (local clock)
	stop     context.CancelFunc
	done     chan struct{}
	taken    chan error
}

// NewMembership returns the membership of the crawl named by keys over rdb (a client or
// a cluster client). It does no I/O.
func NewMembership(rdb redis.UniversalClient, keys Keys, cfg MembershipConfig) *Membership {
	return &Membership{rdb: rdb, keys: keys, cfg: cfg.withDefaults(), instance: rand.Text(), taken: make(chan error, 1)}
}

// JoinedAt is when Join registered this member (the local clock; zero
// before Join). A coordinator counts its settle time from it.
func (m *Membership) JoinedAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.joinedAt
}

// Taken delivers, once, the error (an *IDInUseError) of a heartbeat that found this
// member's ID held by another live process: this process's member had expired (it
// was stalled or cut off from Redis longer than the TTL) and another process joined
// with the ID meanwhile. The heartbeat loop stops then, without touching the other's
// record; the owner of the Membership should stop working under the ID.
func (m *Membership) Taken() <-chan error { return m.taken }

// Config returns the configuration in use, defaults filled in.
func (m *Membership) Config() MembershipConfig { return m.cfg }

// Keys returns the crawl's key scheme.
func (m *Membership) Keys() Keys { return m.keys }

// Join registers self (ID and Weight required; Deadline ignored) and starts the heartbeat
// loop, which runs until Leave or Close. Registering an ID that is already listed with
// the same weight (a restarted node) does not change the epoch; a new ID or a new weight
// does. An ID listed with a live heartbeat (deadline not passed) under another Instance
// is refused with an *IDInUseError (errors.Is ErrNodeIDInUse) that names the holder's
// pid and host; one listed under the same Instance, or whose deadline passed, is taken
// over. It returns the epoch after the join; ErrJoined if already joined, ErrBadName or
// an error for a weight below 1.
func (m *Membership) Join(ctx context.Context, self Member) (int64, error) {
	if err := CheckNodeID(self.ID); err != nil {
		return 0, err
	}
	if self.Weight < 1 {
		return 0, fmt.Errorf("cannot join as %q with weight %d: want a weight ≥ 1", self.ID, self.Weight)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.joined {
		return 0, fmt.Errorf("cannot join as %q: %w as %q", self.ID, ErrJoined, m.self.ID)
	}
	self.Deadline = time.Time{}
	self.Meta = cloneMap(self.Meta)
	if self.Instance == "" {
		self.Instance = m.instance
	}
	if self.PID == 0 {
		self.PID = os.Getpid()
	}
	if self.Host == "" {
		self.Host, _ = os.Hostname()
	}
	self.TTLMillis = m.cfg.TTL.Milliseconds()
	m.self = self
	epoch, err := m.join(ctx, self)
	if err != nil {
		return 0, err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	m.joined, m.joinedAt, m.stop, m.done = true, time.Now(), cancel, make(chan struct{})
	go m.heartbeatLoop(loopCtx, m.done)
	return epoch, nil
}

func cloneMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *Membership) memberKeys() []string {
	return []string{m.keys.Members(), m.keys.Info(), m.keys.Epoch()}
}

func (m *Membership) join(ctx context.Context, self Member) (int64, error) {
	rec, err := json.Marshal(self)
	if err != nil {
		return 0, fmt.Errorf("cannot encode member %q: %w", self.ID, err)
	}
	res, err := joinScript.Run(ctx, m.rdb, m.memberKeys(), self.ID, m.cfg.TTL.Milliseconds(), rec, self.Weight, m.keys.Events(), self.Instance).Slice()
	if err != nil {
		return 0, fmt.Errorf("cannot register member %q of crawl %q: %w", self.ID, m.keys.Crawl(), err)
	}
	if len(res) == 2 && res[0] == "ok" {
		if e, ok := res[1].(int64); ok {
			return e, nil
		}
	}
	if ierr := m.inUse(self.ID, res); ierr != nil {
		return 0, ierr
	}
	return 0, fmt.Errorf("cannot register member %q of crawl %q: unexpected reply %v", self.ID, m.keys.Crawl(), res)
}

// Check reports, without writing anything, whether Join would refuse id for instance
// (empty: this Membership's random one): an *IDInUseError (errors.Is ErrNodeIDInUse)
// when a live member of another instance holds it, nil when it is free or ours. A
// caller that must not touch an ID's other state (queues, registrations) before it
// knows the ID is its own checks first; Join still checks again, atomically.
func (m *Membership) Check(ctx context.Context, id, instance string) error {
	if err := CheckNodeID(id); err != nil {
		return err
	}
	if instance == "" {
		instance = m.instance
	}
	res, err := checkScript.Run(ctx, m.rdb, m.memberKeys(), id, instance).Slice()
	if err != nil {
		return fmt.Errorf("cannot read the member list of crawl %q: %w", m.keys.Crawl(), err)
	}
	return m.inUse(id, res)
}

// inUse decodes a script's {"taken", record, deadline ms, now ms} reply into an
// *IDInUseError; nil for any other reply.
func (m *Membership) inUse(id string, res []any) error {
	if len(res) != 4 || res[0] != "taken" {
		return nil
	}
	var holder Member
	s, _ := res[1].(string)
	_ = json.Unmarshal([]byte(s), &holder) // a record that does not parse still names the ID
	holder.ID = id
	deadline, _ := parseScore(res[2])
	now, _ := parseScore(res[3])
	holder.Deadline = time.UnixMilli(deadline)
	ttl := holder.TTLMillis
	if ttl <= 0 {
		ttl = m.cfg.TTL.Milliseconds()
	}
	return &IDInUseError{ID: id, Holder: holder, LastSeen: time.Duration(now-(deadline-ttl)) * time.Millisecond, Hint: m.cfg.IDHint}
}

// heartbeatLoop extends the member's deadline every Heartbeat, re-registering it when it
// was removed (it missed its deadline, or Redis lost the list).
func (m *Membership) heartbeatLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(m.cfg.Heartbeat)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := m.heartbeat(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case errors.Is(err, ErrNodeIDInUse):
			// Another process holds the ID now: stop claiming it (see Taken).
			m.cfg.Logger.Error("membership: another live process took this member's id; stopping its heartbeats", "crawl", m.keys.Crawl(), "member", m.Self().ID, "err", err)
			select {
			case m.taken <- err:
			default:
			}
			return
		case err != nil && !failing:
			failing = true
			m.cfg.Logger.Warn("membership heartbeat failed; the member expires if this lasts", "crawl", m.keys.Crawl(), "member", m.Self().ID, "ttl", m.cfg.TTL, "err", err)
		case err == nil && failing:
			failing = false
			m.cfg.Logger.Info("membership heartbeat recovered", "crawl", m.keys.Crawl(), "member", m.Self().ID)
		}
	}
}

func (m *Membership) heartbeat(ctx context.Context) error {
	self := m.Self()
	rec, err := json.Marshal(self)
	if err != nil {
		return fmt.Errorf("cannot encode member %q: %w", self.ID, err)
	}
	hctx, cancel := context.WithTimeout(ctx, m.cfg.Heartbeat)
	defer cancel()
	res, err := heartbeatScript.Run(hctx, m.rdb, m.memberKeys(), self.ID, m.cfg.TTL.Milliseconds(), rec, self.Instance).Slice()
	if err != nil {
		return fmt.Errorf("cannot send heartbeat of %q: %w", self.ID, err)
	}
	if ierr := m.inUse(self.ID, res); ierr != nil {
		return ierr
	}
	if len(res) == 1 && res[0] == "ok" {
		return nil
	}
	epoch, err := m.join(hctx, self)
	if err != nil {
		return err
	}
	m.cfg.Logger.Warn("member was no longer listed (missed heartbeats or Redis lost it); registered again", "crawl", m.keys.Crawl(), "member", self.ID, "epoch", epoch)
	return nil
}

// Self returns this node's member record as last joined, with the latest load.
func (m *Membership) Self() Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.self
	s.Meta = cloneMap(s.Meta)
	return s
}

// SetLoad records the node's load; the next heartbeat publishes it.
func (m *Membership) SetLoad(l Load) {
	m.mu.Lock()
	m.self.Load = l
	m.mu.Unlock()
}

// Members removes the members past their deadline (raising the epoch once if there were
// any) and returns the live ones, sorted by ID, with the epoch.
func (m *Membership) Members(ctx context.Context) (View, error) {
	res, err := membersScript.Run(ctx, m.rdb, m.memberKeys(), m.keys.Events()).Slice()
	if err != nil {
		return View{}, fmt.Errorf("cannot read the members of crawl %q: %w", m.keys.Crawl(), err)
	}
	return parseMembers(res)
}

func parseMembers(res []any) (View, error) {
	bad := func(what string) (View, error) {
		return View{}, fmt.Errorf("cannot parse the member list: %s", what)
	}
	if len(res) != 3 {
		return bad("want 3 parts")
	}
	epoch, ok1 := res[0].(int64)
	live, ok2 := res[1].([]any)
	recs, ok3 := res[2].([]any)
	if !ok1 || !ok2 || !ok3 || len(live) != 2*len(recs) {
		return bad("unexpected reply shape")
	}
	v := View{Epoch: epoch, Members: make([]Member, 0, len(recs))}
	for i, r := range recs {
		id, _ := live[2*i].(string)
		s, _ := r.(string)
		var mem Member
		if err := json.Unmarshal([]byte(s), &mem); err != nil || mem.ID != id {
			// A record that does not parse is skipped, not fatal: one bad writer must not
			// stop every node from reading the list.
			continue
		}
		if ms, err := parseScore(live[2*i+1]); err == nil {
			mem.Deadline = time.UnixMilli(ms)
		}
		v.Members = append(v.Members, mem)
	}
	slices.SortFunc(v.Members, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	return v, nil
}

func parseScore(v any) (int64, error) {
	switch s := v.(type) {
	case string:
		var f float64
		_, err := fmt.Sscan(s, &f)
		return int64(f), err
	case int64:
		return s, nil
	case float64:
		return int64(s), nil
	}
	return 0, fmt.Errorf("cannot parse score %v", v)
}

// Leave stops the heartbeat loop and removes the member at once, raising the epoch, so
// that the others rebalance without waiting for the TTL. It returns ErrNotJoined if the
// membership had not joined; after Leave, Join may be called again.
func (m *Membership) Leave(ctx context.Context) error {
	id, ok := m.halt()
	if !ok {
		return fmt.Errorf("cannot leave crawl %q: %w", m.keys.Crawl(), ErrNotJoined)
	}
	if err := leaveScript.Run(ctx, m.rdb, m.memberKeys(), id, m.keys.Events(), m.Self().Instance).Err(); err != nil {
		return fmt.Errorf("cannot remove member %q from crawl %q (it expires after %v): %w", id, m.keys.Crawl(), m.cfg.TTL, err)
	}
	return nil
}

// Close stops the heartbeat loop without leaving: the member stays listed until its
// deadline, then expires, as after a crash. Closing a membership that has not joined does
// nothing.
func (m *Membership) Close() { m.halt() }

func (m *Membership) halt() (string, bool) {
	m.mu.Lock()
	if !m.joined {
		m.mu.Unlock()
		return "", false
	}
	m.joined = false
	stop, done, id := m.stop, m.done, m.self.ID
	m.mu.Unlock()
	stop()
	<-done
	return id, true
}

// Watch sends the live member list now and again whenever its epoch changes, until ctx
// ends, then closes the channel. It re-reads the list every Poll and as soon as another
// member publishes a change. A slow reader gets the latest view, not every view: the
// channel holds one view and a newer one replaces an unread older one. Read errors are
// logged and retried at the next poll.
func (m *Membership) Watch(ctx context.Context) <-chan View {
	out := make(chan View, 1)
	sub := m.rdb.Subscribe(ctx, m.keys.Events())
	go func() {
		defer close(out)
		defer sub.Close()
		msgs := sub.Channel()
		tick := time.NewTicker(m.cfg.Poll)
		defer tick.Stop()
		last := int64(-1)
		failing := false
		for {
			pctx, cancel := context.WithTimeout(ctx, max(m.cfg.Poll, time.Second))
			v, err := m.Members(pctx)
			cancel()
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil:
				if !failing {
					m.cfg.Logger.Warn("cannot read the member list; retrying", "crawl", m.keys.Crawl(), "err", err)
				}
				failing = true
			case v.Epoch != last:
				failing = false
				last = v.Epoch
				select {
				case out <- v:
				default:
					select {
					case <-out:
					default:
					}
					out <- v
				}
			default:
				failing = false
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-msgs:
			}
		}
	}()
	return out
}
