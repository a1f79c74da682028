// Package cluster is the Redis coordination layer of a distributed crawl (issue 4):
// membership, bucket leases with fencing, and the coordinator that makes each node own
// the buckets the consistent-hash ring gives it.
//
// # Pieces
//
//   - Keys (keys.go): the key scheme. Every key of crawl C starts with "spider:C:"; a
//     bucket's keys share the Redis Cluster hash tag {bN}, so one Lua script can update
//     them atomically on one Redis or on a cluster.
//   - Membership: Join registers a node with a weight and starts heartbeats (deadlines on
//     the Redis server's clock); Members lists the live ones and removes the expired
//     (atomically, in Lua); Watch follows the list; every change raises the epoch.
//     An ID is one process's at a time: each member publishes an Instance token (a
//     p2p node or §0 host: its data directory's, store.NodeToken), and Join refuses an
//     ID whose holder is live (deadline not passed) under another Instance with an
//     *IDInUseError (ErrNodeIDInUse) naming the holder's pid and host; the same
//     Instance (a restart on the same data directory) takes it over at once, another
//     one once the holder's deadline passed. A member that was cut off past its TTL and
//     finds its ID taken stops its heartbeats and reports it on Taken; Leave never
//     removes another Instance's record. Check answers like Join without writing.
//   - BucketLeases: a node works on bucket N only while it holds spider:C:{bN}:owner =
//     "NODE:TOKEN" (SET PX, renew-if-mine, release-if-mine). TOKEN increases on every
//     acquisition of the bucket; FencedScript makes a write conditional on the lease,
//     atomically, so a node that lost a bucket cannot write to it. Renewal runs every
//     TTL/3 for all leases in one pipeline; a lease not renewed for 2·TTL/3 is reported
//     lost, TTL/3 before it can expire in Redis and be taken by another node.
//   - Lock (lock.go): a lease on one key without a fencing token, for a role one process
//     plays at a time (the rank map/reduce master, the layered coordinator): taken when
//     free (SET NX PX), renewed and released only by its holder's value with the scripts
//     BucketLeases uses, Keep renews every TTL/3 and returns ErrLockLost when it is gone.
//   - Hash slots: package cluster/slots (a leaf: no Redis client) computes Redis Cluster
//     key slots and the spread tags (SpreadTag) every topology chooses its tags with.
//   - The toolkit of every topology (issue 21): LuaNow, the Redis server clock every Lua
//     script takes its times from; ScriptBatch, scripts over many slots in one pipeline
//     by SHA, re-sent in full on NOSCRIPT; TopologyPrefix, SpreadPrefix and SpreadTags,
//     the key prefixes and spread hash tags of the master–worker, layered, rank and
//     index keys; Every, a heartbeat or report loop whose stop waits for the call in
//     flight; Retry and Outage, the one retry policy for a Redis outage.
//   - Coordinator: on every member-list change computes the table bucket → node
//     (partition.Ring over the live members), releases what is no longer its own (after
//     Drain), acquires what is (waiting for the previous owner), and emits Acquired,
//     Released and Lost events.
//
// # Counters that survive Redis losing data
//
// Epochs and fencing tokens are raised to max(old+1, Redis server time in µs), so they
// keep increasing across a Redis restart without persistence (or with an everysec AOF
// that lost its last second), as long as the server's clock does not go back.
//
// # Typical node
//
//	keys, _ := cluster.NewKeys("crawl1")
//	m := cluster.NewMembership(rdb, keys, cluster.MembershipConfig{})
//	m.Join(ctx, cluster.Member{ID: "node-a", Weight: 150})
//	c, _ := cluster.NewCoordinator(rdb, m, cluster.CoordinatorConfig{Drain: stopBucket})
//	go c.Run(ctx)
//	for ev := range c.Events() { … start or stop crawling ev.Bucket … }
//
// Tests run against real redis-server processes (package redistest), never mocks.
package cluster
