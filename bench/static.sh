#!/usr/bin/env bash
# Issue #22's benchmark: the crawlers against a real static server. websim
# dump writes the deterministic web as files (documentation-like pages with
# a TOC of their host, robots.txt with a Disallow, .gz beside every file);
# nginx serves them with gzip_static (no compression work on the server)
# on loopback addresses 127.0.0.11… port 8081, one server per host, and
# logs every request with its duration. Each crawler runs with one
# connection per host and no delay; it is judged from the access log
# (bench/static/judge.py: coverage, robots violations, duplicates,
# per-host overlaps, connections, smallest gap) and measured with
# /usr/bin/time (wall, CPU, peak RSS; summed over the processes of
# crawlers run one process per host).
#
#   bench/static.sh [REPEAT]       (default 3; prints the median table)
#
# Variables: HOSTS (4), PAGES (400 per host), SEED (1), CRAWLERS
# ("spider wget wget2 colly scrapy": those not installed are skipped),
# WORK (a new temporary directory), SPIDER_FLAGS (extra spider flags).
# Needs nginx (apt-get install -y nginx-light) and wget; wget2 and scrapy
# are used when installed. Loopback addresses only.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
hosts=${HOSTS:-4}
pages=${PAGES:-400}
seed=${SEED:-1}
port=8081
first=11
crawlers=${CRAWLERS:-spider wget wget2 colly scrapy}
command -v nginx >/dev/null || { echo "static.sh: nginx is not installed: apt-get install -y nginx-light" >&2; exit 1; }
command -v wget >/dev/null || { echo "static.sh: wget is not installed: apt-get install -y wget" >&2; exit 1; }

work=${WORK:-$(mktemp -d /tmp/spider-static.XXXXXX)}
mkdir -p "$work"
chmod 755 "$work"
bin=$work/bin
mkdir -p "$bin"
go build -o "$bin/spider" ./cmd/spider
go build -o "$bin/websim" ./cmd/websim
(cd bench/peers/colly && go build -o "$bin/colly" .)

web=$work/web
if [ ! -f "$web/manifest.json" ]; then
	rm -rf "$web"
	"$bin/websim" dump --out "$web" --hosts "$hosts" --pages "$pages" --seed "$seed" \
		--first-addr "$first" --serve-port "$port"
fi
mapfile -t seeds < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["seeds"]))' "$web/manifest.json")
mapfile -t dirs < <(python3 -c 'import json,sys; print("\n".join(h["dir"] for h in json.load(open(sys.argv[1]))["hosts"]))' "$web/manifest.json")

run=$work/nginx
mkdir -p "$run/tmp"
{
	echo "worker_processes 1;"
	echo "pid $run/nginx.pid;"
	echo "error_log $run/error.log;"
	echo "events { worker_connections 4096; }"
	echo "http {"
	echo "  include /etc/nginx/mime.types; default_type application/octet-stream;"
	echo "  log_format bench '\$msec \$request_time \$server_addr:\$server_port \$connection \$connection_requests \$status \$body_bytes_sent \$request_uri \"\$http_user_agent\"';"
	echo "  access_log $run/access.log bench;"
	echo "  client_body_temp_path $run/tmp/body; proxy_temp_path $run/tmp/proxy; fastcgi_temp_path $run/tmp/fastcgi;"
	echo "  uwsgi_temp_path $run/tmp/uwsgi; scgi_temp_path $run/tmp/scgi;"
	echo "  sendfile on; tcp_nodelay on; keepalive_requests 1000000; keepalive_timeout 120s;"
	echo "  gzip_static on; gzip off;"
	for d in "${dirs[@]}"; do
		echo "  server { listen ${d%_*}:$port; root $web/$d; index index.html; }"
	done
	echo "}"
} >"$run/nginx.conf"
nginx -t -p "$run" -c "$run/nginx.conf" 2>/dev/null || nginx -t -p "$run" -c "$run/nginx.conf"
nginx -p "$run" -c "$run/nginx.conf"
trap 'nginx -p "$run" -c "$run/nginx.conf" -s quit 2>/dev/null || true' EXIT
for s in "${seeds[@]}"; do # wait until every server answers
	for _ in $(seq 50); do curl -fsS -o /dev/null "$s" 2>/dev/null && break; sleep 0.1; done
done

results=$work/results.jsonl
: >"$results"
reject=css,js,png,jpg,jpeg,gif,svg,ico,webp,pdf,zip,mp4,woff,woff2
has() { case "$1" in
	wget2) command -v wget2 >/dev/null ;;
	scrapy) python3 -c 'import scrapy' 2>/dev/null ;;
	*) true ;;
esac; }

# measure NAME CMD…: runs CMD under /usr/bin/time into $work/time.NAME.N,
# stopped after CRAWL_TIMEOUT (default 120 s) and with at most CRAWL_MEM_KB
# of address space (default 8 GiB): Colly was seen to run away on this web
# (tens of thousands of repeated requests, 20 GB of memory).
measure() {
	local name=$1; shift
	(ulimit -v "${CRAWL_MEM_KB:-8388608}"
		exec /usr/bin/time -f '%e %U %S %M' -o "$work/time.$name.$BASHPID.$RANDOM" timeout "${CRAWL_TIMEOUT:-120}" "$@")
}

for rep in $(seq "$repeat"); do
	for c in $crawlers; do
		has "$c" || { [ "$rep" = 1 ] && echo "static.sh: $c not installed, skipped" >&2; continue; }
		out=$work/out.$c.$rep
		rm -rf "$out" "$work"/time.* && mkdir -p "$out"
		before=$(stat -c %s "$run/access.log" 2>/dev/null || echo 0)
		t0=$(date +%s.%N)
		case $c in
		spider)
			# shellcheck disable=SC2086
			measure spider "$bin/spider" crawl --data "$out" --quiet --per-host 1 --delay 0 --allow-private \
				--max-depth -1 --scope seeds ${SPIDER_FLAGS:-} "${seeds[@]}" ;;
		wget)
			for s in "${seeds[@]}"; do
				measure wget wget -q -r -l inf -e robots=on -R "$reject" -P "$out/${s//[^0-9]/_}" "$s" &
			done
			wait ;;
		wget2)
			for s in "${seeds[@]}"; do
				measure wget2 wget2 -q -r -l 0 --robots=on --max-threads=1 -R "$reject" -P "$out/${s//[^0-9]/_}" "$s" &
			done
			wait ;;
		colly)
			measure colly "$bin/colly" --max-depth -1 --parallelism 32 --per-seed-host 1 "${seeds[@]}" >"$out/report.json" ;;
		scrapy)
			measure scrapy python3 bench/peers/scrapy/peer.py --max-depth -1 --per-host 1 --concurrency 32 "${seeds[@]}" >"$out/report.json" ;;
		esac || echo "static.sh: $c exited with an error" >&2
		t1=$(date +%s.%N)
		tail -c +"$((before + 1))" "$run/access.log" >"$work/log.$c.$rep"
		read -r cpu rss < <(cat "$work"/time.* | awk '{cpu += $2 + $3; rss += $4} END {print cpu, rss}')
		python3 bench/static/judge.py run "$web/manifest.json" "$work/log.$c.$rep" "$c" \
			"$(echo "$t1 - $t0" | bc)" "$cpu" "$rss" | tee -a "$results"
	done
done
echo
echo "web: $hosts hosts × $pages pages (websim seed $seed), nginx gzip_static on 127.0.0.$first…:$port; $(nproc) CPUs"
python3 bench/static/judge.py summary "$results"
echo "work directory: $work"
