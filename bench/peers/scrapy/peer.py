#!/usr/bin/env python3
"""Scrapy peer of spider's crawler benchmarks (bench/peerbench).

It does the job `spider crawl` does with Scrapy's own machinery: robots.txt
obeyed (ROBOTSTXT_OBEY, agent token "spider"), one request in flight per host
(CONCURRENT_REQUESTS_PER_DOMAIN = 1: Scrapy's download slot is the host name),
DOWNLOAD_DELAY between requests to one host, CONCURRENT_REQUESTS in flight in
all, DEPTH_LIMIT with seeds at depth 0, breadth-first order (DEPTH_PRIORITY 1
and FIFO queues, as Scrapy's documentation advises for broad crawls) and
Scrapy's request fingerprint de-dup. It follows a/area/link href (rel=nofollow
skipped), iframe/frame src and meta refresh URLs, and skips the same path
suffixes. Host names are resolved from a curl-style HOST:PORT:ADDR file by a
resolver class (websim serves every host on loopback).

It prints one JSON line at the end:

    {"crawler":"scrapy","pages":N,"errors":N,"seconds":S}

With --progress SECONDS it also prints, every SECONDS, a JSON line
{"progress":true,"pages":N,"discovered":N,"seconds":S} on standard error
(discovered = requests accepted by the scheduler).

Run with Debian's python3-scrapy: /usr/bin/python3 peer.py --help
"""

import argparse
import json
import sys
import time
from urllib.parse import urldefrag, urlsplit

from scrapy import Request, Spider, signals
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse
from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer, task

DEFAULT_SUFFIXES = ".png,.jpg,.jpeg,.gif,.css,.js,.pdf,.zip,.ico,.svg,.woff,.mp4"
DEFAULT_UA = "spider/0.1 (+https://github.com/spider-crawler/spider)"

# RESOLVE maps lower-case host names to addresses; filled from --resolve-file
# before the crawl starts (Scrapy builds the resolver from a class name, so the
# table cannot be passed to its constructor).
RESOLVE = {}


def read_resolve_file(path):
    """Return {host: addr} from curl-style HOST:PORT:ADDR lines."""
    table = {}
    if not path:
        return table
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(":", 2)
            if len(parts) != 3 or not parts[0] or not parts[1] or not parts[2]:
                raise ValueError(f"cannot use resolve line {n} {line!r}: want HOST:PORT:ADDR")
            table[parts[0].lower()] = parts[2].strip("[]")
    return table


class TableResolver(CachingThreadedResolver):
    """Answers names in RESOLVE without DNS; others as Scrapy's default."""

    def getHostByName(self, name, timeout=None):
        addr = RESOLVE.get(name.lower())
        if addr is not None:
            return defer.succeed(addr)
        return super().getHostByName(name, timeout)


def refresh_url(content):
    """Return the URL of a meta refresh content ("0; url=/next") or None."""
    for sep in (";", ","):
        if sep in content:
            rest = content.split(sep, 1)[1].strip()
            break
    else:
        return None
    if rest[:3].lower() != "url":
        return None
    rest = rest[3:].strip()
    if not rest.startswith("="):
        return None
    rest = rest[1:].strip().strip("\"'")
    return rest or None


class PeerSpider(Spider):
    """Follows every link kind websim's ground truth follows, to DEPTH_LIMIT."""

    name = "peer"

    def __init__(self, seeds, suffixes, stats, max_depth, **kw):
        super().__init__(**kw)
        self.seeds = seeds
        self.max_depth = max_depth
        self.suffixes = tuple(suffixes)
        self.counts = stats

    def start_requests(self):
        for s in self.seeds:
            yield Request(s, callback=self.parse, errback=self.failed)

    def failed(self, failure):
        self.counts["errors"] += 1
        self.counts["pages"] += 1

    def parse(self, response):
        self.counts["pages"] += 1
        if not isinstance(response, HtmlResponse) or response.status != 200:
            return
        if 0 <= self.max_depth <= response.meta.get("depth", 0):
            return  # DepthMiddleware would drop these links anyway
        refs = []
        for el in response.xpath("//a[@href] | //area[@href] | //link[@href]"):
            rel = (el.attrib.get("rel") or "").lower().split()
            if "nofollow" not in rel:
                refs.append(el.attrib["href"])
        refs += response.xpath("//iframe/@src | //frame/@src").getall()
        for el in response.xpath("//meta[@http-equiv][@content]"):
            if el.attrib["http-equiv"].strip().lower() == "refresh":
                u = refresh_url(el.attrib["content"])
                if u:
                    refs.append(u)
        for ref in refs:
            ref = ref.strip()
            if not ref:
                continue
            try:
                url = urldefrag(response.urljoin(ref))[0]
                parts = urlsplit(url)
            except ValueError:
                continue
            if parts.scheme not in ("http", "https"):
                continue
            if parts.path.lower().endswith(self.suffixes):
                continue
            yield Request(url, callback=self.parse, errback=self.failed)


def main(argv):
    p = argparse.ArgumentParser(prog="scrapy-peer", description="Scrapy peer of spider's benchmarks")
    p.add_argument("--resolve-file", default="", help="file of curl-style HOST:PORT:ADDR lines")
    p.add_argument("--max-depth", type=int, default=5, help="largest link depth fetched; seeds are 0; -1 = unlimited")
    p.add_argument("--concurrency", type=int, default=32, help="CONCURRENT_REQUESTS")
    p.add_argument("--per-host", type=int, default=1, help="CONCURRENT_REQUESTS_PER_DOMAIN")
    p.add_argument("--delay", type=float, default=0.0, help="DOWNLOAD_DELAY in seconds")
    p.add_argument("--suffixes", default=DEFAULT_SUFFIXES, help="comma-separated path suffixes not fetched")
    p.add_argument("--user-agent", default=DEFAULT_UA, help="User-Agent header; its product token selects the robots.txt group")
    p.add_argument("--progress", type=float, default=0, help="print a progress line on stderr every this many seconds (0: none)")
    p.add_argument("seeds", nargs="+", help="seed URLs")
    a = p.parse_args(argv)
    if a.concurrency < 1 or a.per_host < 1:
        p.error("cannot use --concurrency or --per-host below 1")
    try:
        RESOLVE.update(read_resolve_file(a.resolve_file))
    except (OSError, ValueError) as e:
        print(f"scrapy-peer: {e}", file=sys.stderr)
        return 2
    settings = {
        "BOT_NAME": "spider",
        "USER_AGENT": a.user_agent,
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "spider",
        "CONCURRENT_REQUESTS": a.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": a.per_host,
        "DOWNLOAD_DELAY": a.delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        # Scrapy's DEPTH_LIMIT 0 means "no limit"; parse stops at depth 0 itself.
        "DEPTH_LIMIT": max(a.max_depth, 0),
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "DNS_RESOLVER": __name__ + ".TableResolver",
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    }
    counts = {"pages": 0, "errors": 0}
    proc = CrawlerProcess(settings)
    crawler = proc.create_crawler(PeerSpider)
    start = time.monotonic()
    if a.progress > 0:
        def tick():
            st = crawler.stats
            line = {"progress": True, "pages": counts["pages"],
                    "discovered": st.get_value("scheduler/enqueued", 0) if st else 0,
                    "seconds": round(time.monotonic() - start, 3)}
            print(json.dumps(line), file=sys.stderr, flush=True)
        loop = task.LoopingCall(tick)

        def start_loop():
            loop.start(a.progress, now=False)

        def stop_loop():
            if loop.running:
                loop.stop()
            tick()  # a last line with the final counts

        # Scrapy holds signal receivers by weak reference: these names keep
        # them alive for the crawl (inline lambdas would be collected).
        crawler.signals.connect(start_loop, signal=signals.engine_started)
        crawler.signals.connect(stop_loop, signal=signals.engine_stopped)
    proc.crawl(crawler, seeds=a.seeds, suffixes=[s.strip().lower() for s in a.suffixes.split(",") if s.strip()],
               stats=counts, max_depth=a.max_depth)
    proc.start()
    print(json.dumps({"crawler": "scrapy", "pages": counts["pages"], "errors": counts["errors"],
                      "seconds": round(time.monotonic() - start, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
