#!/usr/bin/env bash
# The project's test command (README): every package, race detector on,
# summarised per package and as "N passed, N failed, N skipped".
# Extra arguments go to go test, e.g. scripts/test.sh -short or -run Crawl.
set -uo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/spider-testsum ./scripts/testsum || exit 1
# The browser tests are a module of their own (chromedp stays out of
# spider's dependencies); their results join the same summary.
{
	go test -race -count=1 -timeout 20m -json "$@" ./...
	(cd test/browser && go test -count=1 -timeout 10m -json "$@" ./...)
} | /tmp/spider-testsum
