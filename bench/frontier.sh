#!/usr/bin/env bash
# bench/frontier.sh — the large-frontier run of issue 11: spider (embedded)
# and the peers that can take it crawl a web far larger than they can finish,
# with no depth limit, each for DURATION, while peerbench samples every
# SAMPLE the crawler's RSS and CPU, the requests websim answered and the URLs
# the crawler says it discovered (spider: /metrics; Colly and Scrapy: their
# --progress lines). A crawler above MAX_RSS_MIB is stopped (shared machine).
# About CRAWLERS × DURATION plus start-up. Environment:
#   DURATION=4m       run time of each crawler
#   SAMPLE=10s        sampling period
#   HOSTS=100000      websim hosts (pages per host: PAGES=100)
#   CRAWLERS=spider,colly,scrapy
#   MAX_RSS_MIB=6144
#   NOISE=1           websim's noise behaviour (session ids, tracking
#                     parameters, calendars): far more distinct URLs per page
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-4m}
SAMPLE=${SAMPLE:-10s}
HOSTS=${HOSTS:-100000}
PAGES=${PAGES:-100}
CRAWLERS=${CRAWLERS:-spider,colly,scrapy}
MAX_RSS_MIB=${MAX_RSS_MIB:-6144}
noise=()
[[ ${NOISE:-1} == 1 ]] && noise=(--noise)

printf '==== machine\n'
date -u '+%Y-%m-%d %H:%M:%S UTC'
echo "nproc $(nproc); $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'); $(go version)"
uptime
cmd=(go run ./bench/peerbench --frontier "$DURATION" --sample "$SAMPLE" --hosts "$HOSTS" --pages "$PAGES"
	--seeds 10 --depth -1 --concurrency 32 --crawlers "$CRAWLERS" --max-rss-mib "$MAX_RSS_MIB" "${noise[@]}")
printf '\n==== %s\n' "${cmd[*]}"
"${cmd[@]}"
printf '\n==== done\n'
uptime
