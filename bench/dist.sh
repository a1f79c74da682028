#!/usr/bin/env bash
# bench/dist.sh — the distributed-crawl measurements of issue 4, printed as
# Markdown (the sections of RESULTS.md "Distributed crawling"):
#   1. weights  SPEC §3: p2p nodes A=150, B=80, C=200, D=40 on 10,000 hosts;
#               then C removed; then E=300 added (shares, sent table, moves)
#   2. scaling  SPEC §1: pages/s with 1, 2, 3, 4, 8 workers (master–worker)
#               and 1–4 nodes (p2p), 100 ms latency per answer
#   3. memory   Redis memory per completed and per pending URL
# About 10 minutes on 2 cores (a p2p crawl that hangs costs 15 s more: see
# RESULTS.md, finding 1 of issue 4). Needs redis-server on PATH. Arguments are
# passed to distbench (e.g. `bench/dist.sh scaling --workers 1,2`).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "machine: nproc $(nproc); $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'); $(go version)" >&2
uptime >&2
go run ./bench/distbench "$@"
uptime >&2
