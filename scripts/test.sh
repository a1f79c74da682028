#!/usr/bin/env bash
# The project's test command (README): every package, race detector on,
# summarised per package and as "N passed, N failed, N skipped".
# Extra arguments go to go test, e.g. scripts/test.sh -short or -run Crawl.
set -uo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/spider-testsum ./scripts/testsum || exit 1
# The fault suite runs the real binary against an in-process synthetic web;
# under the race detector that web serves its large bodies too slowly for
# the suite's time bounds, so it runs without (its harness passes -race on
# its own: go test -race ./test/fault/ -run Proxy). The browser tests are a
# module of their own (chromedp stays out of spider's dependencies), and so is
# test/lazyfs, the FUSE file system of the power-loss case (go-fuse). All
# results join one summary.
pkgs=$(go list ./... | grep -v '/test/fault$')
{
	go test -race -count=1 -timeout 20m -json "$@" $pkgs
	go test -count=1 -timeout 15m -json "$@" ./test/fault/
	(cd test/browser && go test -count=1 -timeout 10m -json "$@" ./...)
	(cd test/lazyfs && go test -count=1 -timeout 5m -json "$@" ./...)
} | /tmp/spider-testsum
