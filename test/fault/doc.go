// Package fault is the fault suite of issue 12: it runs the real spider binary on a
// synthetic web (internal/websim) and injects the failures a long crawl meets, then
// checks the crawl against the web's ground truth. The package holds the tools (a TCP
// proxy that cuts a link, a process wrapper with SIGKILL and RSS sampling, checks and the
// report table); the scenarios are its tests.
//
// # Running
//
//	go test ./test/fault/                   the short run (CI): 2 runs per crash fault
//	go test ./test/fault/ -args -long       nightly: 20 runs per crash fault, 1 GiB bodies
//	SPIDER_FAULT_LONG=1 go test ./test/fault/   the same
//	scripts/fault.sh [--long]               either, with the reliability table printed
//
// Every run prints its seed; SPIDER_FAULT_SEED=N replays the same kill moments, victims,
// pauses and cut modes (the crawl itself still races, as a real one does).
// SPIDER_FAULT_REPORT=FILE appends one JSON Row per scenario and renders FILE.md (the
// table of RELIABILITY.md) and FILE.hostile.md. The suite needs redis-server on PATH and,
// for the disk-full case, the right to mount a tmpfs (root); without it that case is
// skipped and says so.
//
// # Scenarios
//
//   - TestKillSingleNode: spider crawl (embedded bbolt) killed 1–3 times per run at
//     uniform moments of a clean run's duration and restarted; index (spider index),
//     PageRank (spider rank) and searches must equal the clean run's.
//   - TestKillPeer: one of three spider crawl --redis peers killed at a random point of
//     the crawl's progress, restarted with its node id after 0–3 s (or never).
//   - TestKillMaster, TestKillWorker: spider master / one of three spider worker killed
//     and restarted (the worker in half the runs).
//   - TestKillTopicsNode, TestKillTopicsCoordinator: a topics crawl on the cluster
//     (issue 25: spider master --topics FILE as the coordinator, two spider worker
//     --topics FILE as crawl nodes) with one crawl node, or the coordinator, killed and
//     restarted on its --data after 0–2 s; besides the checks below, no URL stored twice
//     except the victim's in-flight tasks, and the coordinator's TCB page counters
//     (DATA/topics/status.json) continue from before the kill.
//   - TestKillCenter: one of two spider center processes of the SPEC §0 mixed topology
//     killed and restarted; no URL may be fetched twice.
//   - TestRedisRestart: redis-server killed (AOF, fsync always) under a p2p and a
//     master–worker crawl, restarted after 0.2–3 s on the same port.
//   - TestPartition: a Proxy between one peer and Redis cuts the link for 0.5–8 s
//     (Blackhole: bytes held; Reset: connections closed), then restores it.
//   - TestDiskFull: the data directory on a tmpfs that fills half-way through the page
//     writes; a clear error, readable state, and a resumed crawl equal to a clean one
//     once the tmpfs is grown.
//   - TestHostile: websim's hostile profile on every host plus a seed whose host has no
//     address: bounded time, RSS and bytes per host, every case counted by spider stats.
//
// # What is checked after each fault
//
// Lost: every URL of Truth.MustFetch has a record in some node's records.jsonl.
// Repeated fetches: websim's access log (AccessLog.Duplicates: requests of a URL after it
// was answered below 500) stays within the in-flight bound of the faults injected — per
// kill, the concurrency of the process killed (the master: its --max-inflight), per
// center kill 0. Processes exit by themselves with status 0. Recovery time: from the end
// of the fault to the next request (whole-crawl faults) or to the faulted node's next
// finished fetch (one node of several), as each row's note says.
package fault
