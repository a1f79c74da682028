#!/usr/bin/env bash
# bench/frontier.sh — the large-frontier run of issue 11: spider (embedded)
# and the peers that can take it crawl a web far larger than they can finish,
# with no depth limit, each for DURATION (or until UNTIL URLs discovered),
# while peerbench samples every SAMPLE the crawler's RSS (and its anonymous
# part), CPU, data-directory bytes, the requests websim answered and the URLs
# the crawler says it discovered (spider: /metrics; Colly and Scrapy: their
# --progress lines). A crawler above MAX_RSS_MIB is stopped (shared machine).
# About CRAWLERS × DURATION plus start-up. Environment:
#   PRESET=4m|10m     4m (default): the short run below. 10m: the ≥ 10 million
#                     discovered-URL run: 100,000 hosts × 1,000 pages with 40
#                     extra links per article (websim ExtraLinks: uniformly
#                     chosen pages of uniformly chosen hosts, so most are new),
#                     concurrency 64, until 10,000,000 discovered or 30 min,
#                     sampled every 30 s. About 7,500 new URLs/s on the loaded
#                     2-core machine in a 2-minute probe. For the peers run it
#                     shorter: PRESET=10m CRAWLERS=colly,scrapy DURATION=5m.
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
*)
	echo "frontier.sh: cannot use PRESET=$PRESET: want 4m or 10m" >&2
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
[[ ${NOISE:-1} == 1 ]] && noise=(--noise)

printf '==== machine\n'
date -u '+%Y-%m-%d %H:%M:%S UTC'
echo "nproc $(nproc); $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'); $(go version)"
uptime
cmd=(go run ./bench/peerbench --frontier "$DURATION" --sample "$SAMPLE" --hosts "$HOSTS" --pages "$PAGES"
	--extra-links "$EXTRA_LINKS" --until-discovered "$UNTIL" --seeds 10 --depth -1 --concurrency "$CONCURRENCY"
	--crawlers "$CRAWLERS" --max-rss-mib "$MAX_RSS_MIB" "${noise[@]}")
printf '\n==== %s\n' "${cmd[*]}"
"${cmd[@]}"
printf '\n==== done\n'
uptime
