#!/usr/bin/env bash
# bench/frontier.sh — the large-frontier run of issue 11: spider (embedded)
# and the peers that can take it crawl a web far larger than they can finish,
# with no depth limit, each for DURATION (or until UNTIL URLs discovered),
# while peerbench samples every SAMPLE the crawler's RSS (and its anonymous
# part), CPU, data-directory bytes, the requests websim answered and the URLs
# the crawler says it discovered (spider: /metrics; Colly and Scrapy: their
# --progress lines). A crawler above MAX_RSS_MIB is stopped (shared machine).
# About CRAWLERS × DURATION plus start-up. Environment:
#   PRESET=4m|10m|100m
#                     4m (default): the short run below. 10m: the ≥ 10 million
#                     discovered-URL run: 100,000 hosts × 1,000 pages with 40
#                     extra links per article (websim ExtraLinks: uniformly
#                     chosen pages of uniformly chosen hosts, so most are new),
#                     concurrency 64, until 10,000,000 discovered or 30 min,
#                     sampled every 30 s. About 7,500 new URLs/s on the loaded
#                     2-core machine in a 2-minute probe. For the peers run it
#                     shorter: PRESET=10m CRAWLERS=colly,scrapy DURATION=5m.
#                     100m: the same web, until 100,000,000 discovered or 4 h,
#                     sampled every minute. The data directory grows with the
#                     pages fetched (about 0.55 KiB per discovered URL at 10 M,
#                     pages and records included), so the run refuses to start
#                     with less than 80 GiB free under WORK (MIN_FREE_GIB).
#   WORK=$TMPDIR      where the crawlers' data directories go (peerbench --work)
#   DURATION=4m       run time of each crawler
#   SAMPLE=10s        sampling period
#   HOSTS=100000      websim hosts (pages per host: PAGES=100)
#   EXTRA_LINKS=0     websim links added to every article (see PRESET=10m)
#   UNTIL=0           end a crawler's run after this many discovered URLs
#   CONCURRENCY=32    fetch workers (spider), parallelism (peers)
#   CRAWLERS=spider,colly,scrapy
#   MAX_RSS_MIB=6144
#   NOISE=1           websim's noise behaviour (session ids, tracking
#                     parameters, calendars): far more distinct URLs per page
set -euo pipefail
cd "$(dirname "$0")/.."

case ${PRESET:-4m} in
4m) ;;
10m)
	: "${DURATION:=30m}" "${SAMPLE:=30s}" "${HOSTS:=100000}" "${PAGES:=1000}"
	: "${EXTRA_LINKS:=40}" "${UNTIL:=10000000}" "${CONCURRENCY:=64}" "${CRAWLERS:=spider}"
	;;
100m)
	: "${DURATION:=4h}" "${SAMPLE:=60s}" "${HOSTS:=100000}" "${PAGES:=1000}"
	: "${EXTRA_LINKS:=40}" "${UNTIL:=100000000}" "${CONCURRENCY:=64}" "${CRAWLERS:=spider}"
	: "${MIN_FREE_GIB:=80}"
	;;
*)
	echo "frontier.sh: cannot use PRESET=$PRESET: want 4m, 10m or 100m" >&2
	exit 2
	;;
esac
DURATION=${DURATION:-4m}
SAMPLE=${SAMPLE:-10s}
HOSTS=${HOSTS:-100000}
PAGES=${PAGES:-100}
EXTRA_LINKS=${EXTRA_LINKS:-0}
UNTIL=${UNTIL:-0}
CONCURRENCY=${CONCURRENCY:-32}
CRAWLERS=${CRAWLERS:-spider,colly,scrapy}
MAX_RSS_MIB=${MAX_RSS_MIB:-6144}
noise=()
work=()
[[ -n ${WORK:-} ]] && work=(--work "$WORK")
if [[ -n ${MIN_FREE_GIB:-} ]]; then
	dir=${WORK:-${TMPDIR:-/tmp}}
	free=$(df --output=avail -BG "$dir" | tail -1 | tr -dc 0-9)
	if ((free < MIN_FREE_GIB)); then
		echo "frontier.sh: PRESET=$PRESET needs $MIN_FREE_GIB GiB free under $dir, has $free GiB: set WORK to a larger disk (or MIN_FREE_GIB to accept the risk)" >&2
		exit 2
	fi
fi
[[ ${NOISE:-1} == 1 ]] && noise=(--noise)

printf '==== machine\n'
date -u '+%Y-%m-%d %H:%M:%S UTC'
echo "nproc $(nproc); $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'); $(go version)"
uptime
cmd=(go run ./bench/peerbench --frontier "$DURATION" --sample "$SAMPLE" --hosts "$HOSTS" --pages "$PAGES"
	--extra-links "$EXTRA_LINKS" --until-discovered "$UNTIL" --seeds 10 --depth -1 --concurrency "$CONCURRENCY"
	--crawlers "$CRAWLERS" --max-rss-mib "$MAX_RSS_MIB" "${noise[@]}" "${work[@]}")
printf '\n==== %s\n' "${cmd[*]}"
"${cmd[@]}"
printf '\n==== done\n'
uptime
