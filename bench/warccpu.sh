#!/usr/bin/env bash
# The crawl's CPU per page with and without --warc, on commit REV and on the
# work tree, in one sitting: bench/warc_test.go (BenchmarkCrawlWARC) is
# copied into REV's tree, both test binaries are built once and run
# alternately ROUNDS times, so that machine noise hits both alike.
#
#   bench/warccpu.sh REV [ROUNDS] [extra test-binary flags…]
#   bench/warccpu.sh cf26db5 3 -test.benchtime 2x
#
# Prints one line per sub-benchmark and run, prefixed "before" or "after";
# compare the medians of cpu-ms/page.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: bench/warccpu.sh REV [ROUNDS] [flags…]}
rounds=${2:-3}
shift $(( $# >= 2 ? 2 : 1 ))
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/before" "$rev" >/dev/null
cp bench/warc_test.go "$work/before/bench/"
(cd "$work/before" && go test -c -o "$work/before.test" ./bench)
go test -c -o "$work/after.test" ./bench
for _ in $(seq "$rounds"); do
	for v in before after; do
		"$work/$v.test" -test.run '^$' -test.bench CrawlWARC "$@" | grep '^Benchmark' | sed "s/^/$v /"
	done
done
