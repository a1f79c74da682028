#!/usr/bin/env bash
# The project's test command (README): every package, race detector on,
# summarised per package and as "N passed, N failed, N skipped".
# Extra arguments go to go test, e.g. scripts/test.sh -short or -run Crawl.
set -uo pipefail
cd "$(dirname "$0")/.."
go build -o /tmp/spider-testsum ./scripts/testsum || exit 1
go test -race -count=1 -timeout 20m -json "$@" ./... | /tmp/spider-testsum
