// Package redisview is the HTTP front's view of a distributed crawl, read
// from Redis: View implements server.CrawlView (the crawl-wide report every
// topology publishes, then the topology's own figures: master–worker,
// peer-to-peer, layered or design §0 hosts) and server.Controller (the
// crawl's control word, seeds for its nodes, a topics crawl's priority
// overrides). MasterWorkerStatus and PeerStatus build what spider status
// --redis --json prints. It lives apart from package server so that the
// server links no Redis client and no topology package: it reads every
// crawl through its interfaces (internal/archtest enforces it).
package redisview
