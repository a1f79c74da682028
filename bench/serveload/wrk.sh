#!/usr/bin/env bash
# Cross-check of serveload with wrk (a load generator in C, Debian package
# wrk): the same server, the same request mix, a client that costs the two
# shared cores far less than serveload's Go client. Prints wrk's latency
# distribution for a warm-up run (not kept) and a measured run.
#
#   bench/serveload/wrk.sh DATA_DIR [MIX] [TARGET]
#
# MIX is zipf (default), uniform or unique; TARGET page (default) or api.
# Variables: CLIENTS=100 DURATION=20s WARMUP=10s THREADS=2 BIN=spider binary
# (default: built from the tree). Every run starts a fresh `spider serve`
# on a random loopback port.
set -euo pipefail
cd "$(dirname "$0")/../.."
data=${1:?usage: bench/serveload/wrk.sh DATA_DIR [zipf|uniform|unique] [page|api]}
mix=${2:-zipf}
target=${3:-page}
clients=${CLIENTS:-100}
duration=${DURATION:-20s}
warmup=${WARMUP:-10s}
threads=${THREADS:-2}
command -v wrk >/dev/null || { echo "wrk.sh: wrk is not installed (Debian: apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
bin=${BIN:-}
if [ -z "$bin" ]; then
	go build -o "$work/spider" ./cmd/spider
	bin=$work/spider
fi
go build -o "$work/serveload" ./bench/serveload
"$work/serveload" --data "$data" --mix "$mix" --target "$target" --paths "$work/paths.txt" --paths-count 2000000
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --data "$data" --addr "127.0.0.1:$port" --preload wait >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
	curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fs "http://127.0.0.1:$port/healthz" >/dev/null || { echo "wrk.sh: spider serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
export SERVELOAD_PATHS=$work/paths.txt
echo "# wrk.sh $(date -u '+%Y-%m-%d %H:%M UTC'): $mix mix, $target, $clients connections, $threads threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
wrk -t"$threads" -c"$clients" -d"$warmup" -s bench/serveload/paths.lua "http://127.0.0.1:$port" >/dev/null
cpu0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
wrk -t"$threads" -c"$clients" -d"$duration" --latency -s bench/serveload/paths.lua "http://127.0.0.1:$port"
cpu1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
awk -v t="$(( cpu1 - cpu0 ))" -v hz="$(getconf CLK_TCK)" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" \
	'BEGIN { printf "spider serve CPU during the measured run: %.2f s; load %s\n", t / hz, l }'

