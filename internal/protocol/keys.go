package protocol

// nodeKeys names the Redis keys of one node (a host or a center). Every key starts with
// "spider:proto:CRAWL:ADDR:", so several nodes may share one Redis in a small set-up,
// although the document gives each its own.
type nodeKeys struct{ p string }

func keysFor(crawl, addr string) nodeKeys {
	return nodeKeys{p: "spider:proto:" + crawl + ":" + addr + ":"}
}

// Transport lists (every node).
func (k nodeKeys) inbox() string      { return k.p + "inbox" }
func (k nodeKeys) inboxProc() string  { return k.p + "inbox:processing" }
func (k nodeKeys) outbox() string     { return k.p + "outbox" }
func (k nodeKeys) outboxSend() string { return k.p + "outbox:sending" }
func (k nodeKeys) received() string   { return k.p + "received" }
func (k nodeKeys) stats() string      { return k.p + "stats" }

// local_Redis (hosts).
func (k nodeKeys) finishURL() string { return k.p + "finish_URL" }
func (k nodeKeys) taskPool() string  { return k.p + "task_pool" }
func (k nodeKeys) taskProc() string  { return k.p + "task_pool:processing" }
func (k nodeKeys) urlPool() string   { return k.p + "URL_pool" }
func (k nodeKeys) seq() string       { return k.p + "seq" }
func (k nodeKeys) leaving() string   { return k.p + "leaving" }

// center_Redis (centers).
func (k nodeKeys) taskURL() string         { return k.p + "task_URL" }
func (k nodeKeys) taskURLSend() string     { return k.p + "task_URL:sending" }
func (k nodeKeys) localReducePool() string { return k.p + "local_reduce_pool" }
func (k nodeKeys) distReducePool() string  { return k.p + "dist_reduce_pool" }
func (k nodeKeys) claims() string          { return k.p + "claims" }
func (k nodeKeys) numbers() string         { return k.p + "numbers" }
func (k nodeKeys) answered(number string) string {
	return k.p + "answered:" + number
}
func (k nodeKeys) registered() string { return k.p + "registered" }
func (k nodeKeys) left() string       { return k.p + "left" }
func (k nodeKeys) done() string       { return k.p + "done" }

// HostMembersCrawl names the cluster.Membership list of a network's hosts, kept in its center's Redis.
func HostMembersCrawl(crawl, net string) string { return "proto." + crawl + "." + net + ".hosts" }

// CenterMembersCrawl names the cluster.Membership list of live centers, kept in every center's Redis.
func CenterMembersCrawl(crawl string) string { return "proto." + crawl + ".centers" }
