#!/usr/bin/env bash
# Compare BenchmarkCrawl (bench/crawl_test.go) on two trees in one sitting:
# the commit REV and the work tree, each built once, run alternately ROUNDS
# times, so that machine noise hits both alike.
#
#   bench/beforeafter.sh REV [ROUNDS] [extra test-binary flags…]
#   bench/beforeafter.sh ee84c65 3 -test.benchtime 5x
#   bench/beforeafter.sh ee84c65 2 -test.benchtime 1x -bench.hosts 1500 -bench.pages 60 -bench.depth 6
#
# Prints one line per run, prefixed "before" or "after". Variables: BENCH
# (default 'Crawl/levels').
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/beforeafter.sh REV [ROUNDS] [flags…]}
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/before" "$rev" >/dev/null
(cd "$work/before" && go test -c -o "$work/before.test" ./bench)
go test -c -o "$work/after.test" ./bench
for _ in $(seq "$rounds"); do
	for v in before after; do
		"$work/$v.test" -test.run '^$' -test.bench "${BENCH:-Crawl/levels}" "$@" | grep '^Benchmark' | sed "s/^/$v /"
	done
done
