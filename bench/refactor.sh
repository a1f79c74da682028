#!/usr/bin/env bash
# Same-sitting before/after comparison for a refactor (issue 21: "no behaviour
# change, the benchmarks' figures the same"): the commit REV and the work tree,
# each built once, run alternately ROUNDS times so that machine noise hits both
# alike, on the three workloads the issue names:
#   crawl   BenchmarkCrawl/levels (websim in process, CPU-bound): ms/op, cpu-ms/page
#   mw, p2p the distributed crawls on a latency-bound websim (bench/distbench
#           scaling: 2 worker processes + a master, and 2 peer-to-peer nodes,
#           real redis-server): pages/s
#   index   `spider index` of one crawl (a fresh index each time): wall and CPU seconds
#
#   bench/refactor.sh REV [ROUNDS]
#
# Prints one line per run and workload, prefixed "before" or "after". Needs
# redis-server on PATH. About 3 minutes per round on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/refactor.sh REV [ROUNDS]}
rounds=${2:-3}
root=$(pwd)
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/before" "$rev" >/dev/null
declare -A tree=([before]="$work/before" [after]="$root")
for v in before after; do
	(cd "${tree[$v]}" && go test -c -o "$work/$v.test" ./bench && go build -o "$work/$v.spider" ./cmd/spider)
done

# One crawl for the index builds, made once by the work tree's spider.
go build -o "$work/websim" ./cmd/websim
"$work/websim" serve --seed 7 --hosts 40 --pages 50 --chinese-share 0.25 --resolve-file "$work/resolve" >"$work/websim.out" 2>&1 &
websim=$!
trap 'kill $websim 2>/dev/null || true; git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/resolve" ] && break; sleep 0.1; done
seeds=$(grep -o 'http://[^ ]*' "$work/websim.out" | head -5)
# shellcheck disable=SC2086
"$work/after.spider" crawl --data "$work/crawl" --quiet --resolve-file "$work/resolve" --allow-private \
	--delay 0 --concurrency 16 --max-depth 6 $seeds >/dev/null
kill $websim

for _ in $(seq "$rounds"); do
	for v in before after; do
		"$work/$v.test" -test.run '^$' -test.bench 'Crawl/levels' -test.benchtime 2x | grep '^Benchmark' | sed "s/^/$v crawl /"
		go run ./bench/distbench scaling --root "${tree[$v]}" --workers 2 --peers 2 2>/dev/null |
			grep -E '^\| *(master|peer)' | awk -F'|' -v v="$v" '{printf "%s dist %s ×%s: pages %s, wall %s s, pages/s %s, Redis cmds/page %s, spider CPU ms/page %s, coverage %s\n", v, $2, $3, $4, $5, $6, $13, $15, $16}' || true
		rm -rf "$work/crawl/index"
		/usr/bin/time -f "$v index wall %e s cpu %U+%S s maxrss %M KB" "$work/$v.spider" index --data "$work/crawl" >/dev/null 2>"$work/time.err" || true
		tail -1 "$work/time.err"
	done
done
