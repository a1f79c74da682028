package redisview

import (
	"strconv"

	"github.com/spider-crawler/spider/internal/masterworker"
	"github.com/spider-crawler/spider/internal/p2p"
	"github.com/spider-crawler/spider/internal/server"
)

// MasterWorkerStatus is the server.ClusterStatus of a master–worker crawl.
func MasterWorkerStatus(mw *masterworker.Status) server.ClusterStatus {
	return server.ClusterStatus{Crawl: mw.Crawl, Source: "master-worker", Done: mw.Done, Epoch: mw.Master["epoch"],
		Queue: masterWorkerQueue(mw), Nodes: workerNodes(mw), Master: mw.Master}
}

// PeerStatus is the server.ClusterStatus of a peer-to-peer crawl.
func PeerStatus(ps *p2p.Status) server.ClusterStatus {
	spread := ps.Spread
	sent := ps.Sent
	if sent == nil {
		sent = map[string]map[string]int64{}
	}
	return server.ClusterStatus{Crawl: ps.Crawl, Source: "peer-to-peer", Done: ps.Done, Epoch: ps.Epoch,
		Queue: peerQueue(ps), Nodes: peerNodes(ps), Sent: sent, Spread: &spread}
}

// masterWorkerQueue is the queue depths a master publishes, with the
// lists' lengths.
func masterWorkerQueue(mw *masterworker.Status) *server.Queue {
	m := mw.Master
	return &server.Queue{Queued: m["queued"], InFlight: m["in_flight"], Hosts: m["hosts"], SRQ: mw.SRQ, NRQ: mw.NRQ, TRQ: mw.FreeTRQ}
}

// workerNodes is one server.Node per worker of a master–worker crawl.
func workerNodes(mw *masterworker.Status) []server.Node {
	nodes := make([]server.Node, 0, len(mw.Workers))
	for _, w := range mw.Workers {
		nodes = append(nodes, server.Node{ID: "worker-" + strconv.Itoa(w.ID), Role: "worker", Queue: w.Queued, InFlight: w.InFlight, LastBeatMS: w.LastBeat.Milliseconds()})
	}
	return nodes
}

// peerQueue sums the peers' queues.
func peerQueue(ps *p2p.Status) *server.Queue {
	q := &server.Queue{}
	for _, n := range ps.Nodes {
		q.Queued += n.Queue
	}
	return q
}

// peerNodes is one server.Node per live peer.
func peerNodes(ps *p2p.Status) []server.Node {
	nodes := make([]server.Node, 0, len(ps.Nodes))
	for _, n := range ps.Nodes {
		nodes = append(nodes, server.Node{ID: n.ID, Role: "peer", Weight: n.Weight, Buckets: n.Buckets,
			PagesPerSec: n.PagesPerSec, Queue: n.Queue, Fetched: n.Fetched, Inbox: n.Inbox, Idle: n.Idle})
	}
	return nodes
}
