// Package protocol is the SPEC §0 two-tier URL de-duplication protocol (issue 5): crawler
// hosts grouped into networks, one center per network, centers talking to centers, all
// state in Redis, and frames {URL_set, IP, number, flag} between them. It is the
// de-duplication mode of the mixed topology (spider crawl --dedup protocol, spider
// center); internal/mixed is the hosts' crawl loop.
//
// # State (SPEC §0 "State")
//
// Every key starts with "spider:proto:CRAWL:{TAG}:", so the one-Redis-per-node layout
// of the document is the normal case but nodes may share a Redis. A node's core keys
// (TAG = its address ADDR: "NET" for a center, "NET/HOST" for a host) share one hash
// tag, so its transactions and scripts stay in one Redis Cluster slot; its growing sets
// are split into Parts parts by URL hash (TAG = "ADDR#I.SALT", the salt chosen so the
// parts' slots are spaced evenly over the 16384 slots): a host's finish_URL, task_pool,
// task_pool:processing, URL_pool and leaving mark, a center's claims and answered:N.
// Each node's Redis may therefore be a Redis Cluster (ClusterURL), and a cluster of M
// masters with equal slot ranges holds about 1/M of each node's parts.
//
//	host (local_Redis)   finish_URL  SET of URLHash: URLs handed to this host
//	                     task_pool   LIST of tasks {u, d, r}; task_pool:processing
//	                     URL_pool    HASH URL → "DEPTH:HOPS" (discovered, smallest depth)
//	                     leaving     set while the host leaves: it refuses hand-outs
//	center (center_Redis) task_URL    LIST of tasks passed by the protocol
//	                     local_reduce_pool  HASH number → round (network pass)
//	                     dist_reduce_pool   HASH number → round (cross-network pass, both
//	                                        our frames out and other networks' frames in)
//	                     claims      HASH URLHash → F:number | R:number | P:number | S:number
//	                     registered  HASH host ID → its Redis URL; left SET of host IDs
//	                     numbers     SET of frame numbers handled; answered:N
//	both                 inbox, outbox (+ :processing, :sending), received, stats
//
// # Frames (SPEC §0 "Protocol frame")
//
// JSON with the document's keys: URL_set (URL → 0 or 1), IP (the sender's node address,
// a name rather than an IP address: hosts behind NAT or in containers share IPs, and the
// address resolves to the node's Redis through the membership), number ("NET/HOST/SEQ",
// SEQ from INCR in the host's Redis, so unique across the system and across restarts),
// flag 1/2/3. Flag-1 frames also carry depth and hops (URL → int), which the crawl needs
// once a URL survives. DecodeFrame validates everything (FuzzDecodeFrame).
//
// # Passes (SPEC §0 "Flow")
//
//  1. Local pass (Host.LocalPass): up to Batch URLs of URL_pool, those whose hash is in
//     finish_URL are dropped, the rest become a flag-1 frame queued in the host's outbox
//     (one Lua script), and only then do they leave URL_pool, so a crash loses no URL (a
//     crash in between submits them again in a later frame, which the center drops as
//     claimed).
//  2. Network pass (Center.onSubmit, onAnswer): the center stores the frame in
//     local_reduce_pool, sets flag 2 and broadcasts it to every other live host of the
//     network (the frame keeps the originator's IP, and a host drops a request carrying
//     its own address, as the document says). Each host answers flag 3 with 1 for the
//     URLs in its finish_URL; the center deletes them. When every host asked has
//     answered, or after AnswerTimeout, or at once for a host that left the membership,
//     the frame moves to dist_reduce_pool.
//  3. Cross-network pass (onRequest, onAnswer, tick): the frame (flag 2, IP = our
//     network) goes to every other live network's center and to the home of every URL
//     in it. The receiving center checks its claims, broadcasts to its own hosts, merges
//     their marks and answers flag 3 to the origin. The origin deletes every URL marked 1;
//     when every network asked has answered, the survivors are passed: claims set to P,
//     appended to task_URL. With one network this pass is skipped.
//
// Survivors go from task_URL to a host's task_pool (Center.dispatch): a URL whose home
// network (below) is another network is handed to that network's task_URL; otherwise to
// the registered host picked by rendezvous hashing of the URL's host:port, so a site is
// crawled by one host of one network (politeness and robots.txt stay in one place). The
// hand-out adds the URL's hash to the host's finish_URL in the same script (acceptLua):
// a host answers "seen" for a URL from the moment it owns it, not after the fetch, and a
// repeated hand-out is a no-op.
//
// # Two frames in flight with the same URL
//
// finish_URL alone cannot stop two frames that are in flight at once from both passing a
// URL nobody has crawled yet. Two rules close that gap:
//
//   - Inside a network, every frame passes through its center, which claims each URL
//     when the frame arrives (claims: F:number); a later frame with a claimed URL drops
//     it at once. Host answers are therefore never needed for safety, which is why a host
//     that does not answer in time can simply be left out of the round.
//   - Across networks, every URL has a home network: Pick(host:port, configured
//     networks). The home's center decides first come first served: it answers 0 to the
//     first frame that asks about an unclaimed URL (claims: R:number, and the same answer
//     again to a re-sent request of that frame) and 1 to every other. Its own frames are
//     claimed on arrival like any frame. A non-home network answers 1 only on final
//     evidence (a URL it passed, or found in its hosts' finish_URL). So a URL survives in
//     exactly one frame: the first one its home saw. A late non-home network is left out
//     after RemoteTimeout; a late home is asked again (counted) and waited for — safety
//     over liveness: while a home network is down, frames holding its URLs wait in
//     dist_reduce_pool. URLs the frame lost this way are marked S (seen elsewhere).
//
// # Transport
//
// Frames travel through Redis lists in the receiver's Redis: the sender appends to its
// own outbox in the same transaction as the state change that produced the frame; a
// forwarder moves the entry to outbox:sending, RPUSHes it to the receiver's inbox and
// INCRs the receiver's received counter (one MULTI on the receiver), then removes it; the
// receiver moves an entry to inbox:processing (BLMOVE), handles it and removes it. A node
// restarting moves both processing lists back. Lists rather than streams: there is one
// consumer per inbox, so consumer groups would add nothing, and the moving of an entry
// between lists is the lease; the receiver's Redis holds what was sent even while the
// receiver is down, and the sender's outbox holds it while the receiver's Redis is down
// (flag-1 frames are kept until delivered; others are given up after 4×RemoteTimeout and
// re-sent by the time-out rules). Delivery is at least once; every handler is
// idempotent (claims keyed by number, duplicate numbers and answers detected, counted).
//
// # Membership, joining and leaving
//
// Hosts join their network with cluster.Membership (heartbeats, TTL on the Redis server's
// clock) in the center's Redis, and register their Redis URL there. Centers join the
// centers' membership in every configured center's Redis. Rounds wait only for live
// members; a host that joins later gets requests from then on and a share of the sites
// (rendezvous hashing moves only its share); a host killed keeps its sites and its tasks
// wait in its Redis until it is back; a host leaving (Host.Leave, --leave) marks
// itself leaving (hand-outs to it are refused and stay in task_URL), hands its tasks back
// to task_URL, submits its URL_pool, delivers its outbox and only then moves from
// registered to left (frames of a host that left are still accepted), so nothing it held
// is lost. Networks join and leave the same way, but homes are
// computed over the configured networks: adding a network for good means changing the
// configuration everywhere (the Fingerprint, compared at join, must match).
//
// # Counted failures
//
// Late answers (their round is over, or the sender had been timed out), duplicate
// answers and frames, answers from nodes the round did not ask (unknown senders), host and
// network time-outs, re-sent requests, undeliverable frames and undecodable frames are
// counted in Prometheus (spider_protocol_*) and in the center's stats hash (spider
// center --status).
//
// # Termination
//
// The leader (the live network with the smallest name) scans every center and every
// registered host every Stable: list and pool lengths and received counters, each node's
// parts first and then its core in one MULTI (work moves only from a part to the core,
// so nothing moving during the read is missed). Because an entry is always in some list (outbox, sending, inbox, processing,
// pool) and every delivery raises the receiver's counter, two scans in a row that find
// nothing and the same counter sum, after at least one task was handed out, mean no work
// and no frame in flight anywhere. The leader then sets the done flag in every center's
// Redis; hosts and centers exit on it.
package protocol
