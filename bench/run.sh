#!/usr/bin/env bash
# bench/run.sh — the single-node benchmarks of issues 3 and 11, printed in order:
#   1. peerbench quick  (spider vs Colly, the bare loop, Crawlee, Scrapy, wget,
#                        wget2: 200 hosts × 50 pages, CPU-bound; peers that are
#                        not installed are skipped with a note)
#   1b. peerbench latency-bound (50 hosts × 30 pages, latency 50ms, delay 200ms:
#                        the politeness bounds, the discovery-aware one simulated,
#                        and each crawler's fraction of them; then spider on its
#                        defaults, with --strict-levels, and start to start)
#   2. peerbench full   (1,000 hosts × 100 pages, depth 6: ~86k pages, CPU-bound;
#                        without Crawlee and Scrapy, which need 30+ min for it)
#   3. BenchmarkCrawl   (the engine in-process; levels vs loose depth)
#   4. frontier memory  (bytes per queued URL; 10M URLs with spill)
#   5. Bloom filter     (look-ups/s; measured vs configured false-positive rate)
#   6. crawl state      (Discover / Complete throughput)
# About 8 minutes on 2 cores with REPEAT=2. Environment:
#   REPEAT=N        runs of each crawler in the full comparison (default 2)
#   QUICK=1         only the quick comparison
#   STATE10M=1      also BenchmarkOpenRebuild10M (10M-URL state reopen; slow, ~1 GB disk)
#   ROBOTS=1        also a quick comparison with websim's robots.txt menu
# The large-frontier run (≥ 10M discovered URLs) is bench/frontier.sh.
# Peers: npm ci in bench/peers/crawlee; apt-get install python3-scrapy wget2.
set -euo pipefail
cd "$(dirname "$0")/.."

REPEAT=${REPEAT:-2}
section() { printf '\n==== %s\n' "$*"; }

section "machine"
date -u '+%Y-%m-%d %H:%M:%S UTC'
echo "nproc $(nproc); $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'); $(go version)"
uptime

section "peerbench quick, all peers: go run ./bench/peerbench --hosts 200 --pages 50 --seeds 5 --depth 4 --repeat $REPEAT"
go run ./bench/peerbench --hosts 200 --pages 50 --seeds 5 --depth 4 --repeat "$REPEAT"
uptime
[[ ${QUICK:-0} == 1 ]] && exit 0

section "peerbench latency-bound: go run ./bench/peerbench --hosts 50 --pages 30 --seeds 5 --depth 4 --latency 50ms --delay 200ms"
go run ./bench/peerbench --hosts 50 --pages 30 --seeds 5 --depth 4 --latency 50ms --delay 200ms
uptime
# spider on its defaults (overlapping levels, relinked: coverage stays exact;
# delay from the answer), level by level for comparison, then with the
# start-to-start delay the peers are given, against the discovery-aware bound.
for args in "" "--strict-levels" "--delay-from start"; do
	section "peerbench latency-bound, spider $args: go run ./bench/peerbench --hosts 50 --pages 30 --seeds 5 --depth 4 --latency 50ms --delay 200ms --crawlers spider --repeat $REPEAT --spider-args \"$args\""
	go run ./bench/peerbench --hosts 50 --pages 30 --seeds 5 --depth 4 --latency 50ms --delay 200ms --crawlers spider --repeat "$REPEAT" --spider-args "$args"
	uptime
done

if [[ ${ROBOTS:-0} == 1 ]]; then
	section "peerbench robots menu: go run ./bench/peerbench --hosts 100 --pages 30 --seeds 3 --depth 4 --robots"
	go run ./bench/peerbench --hosts 100 --pages 30 --seeds 3 --depth 4 --robots
fi

section "peerbench full: go run ./bench/peerbench --hosts 1000 --pages 100 --seeds 10 --depth 6 --repeat $REPEAT --crawlers spider,colly,bare,wget,wget2"
uptime
go run ./bench/peerbench --hosts 1000 --pages 100 --seeds 10 --depth 6 --repeat "$REPEAT" --crawlers spider,colly,bare,wget,wget2
uptime

section "engine in-process: go test ./bench -run '^\$' -bench Crawl -benchtime 2x"
go test ./bench -run '^$' -bench Crawl -benchtime 2x

section "frontier bytes per queued URL: go test ./internal/frontier -run '^\$' -bench MemoryPerURL -benchtime 1x"
go test ./internal/frontier -run '^$' -bench MemoryPerURL -benchtime 1x
section "frontier 10M URLs (1M in memory, 9M spilled): go test ./internal/frontier -run '^\$' -bench TenMillionURLs -benchtime 1x"
go test ./internal/frontier -run '^$' -bench TenMillionURLs -benchtime 1x

section "Bloom: go test ./internal/dedup -run TestBloomFalsePositiveRate -v -bench 'BloomTest' -benchtime 1s"
go test ./internal/dedup -run 'TestBloomFalsePositiveRate' -v -bench 'BloomTest' -benchtime 1s

section "state: go test ./internal/state -run '^\$' -bench 'Discover|Complete' -benchtime 2s"
go test ./internal/state -run '^$' -bench 'Discover|Complete' -benchtime 2s
if [[ ${STATE10M:-0} == 1 ]]; then
	section "state 10M: go test ./internal/state -run '^\$' -bench OpenRebuild10M -benchtime 1x -timeout 30m"
	go test ./internal/state -run '^$' -bench OpenRebuild10M -benchtime 1x -timeout 30m
fi

section "done"
uptime
