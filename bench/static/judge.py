#!/usr/bin/env python3
"""Judge one crawler run from nginx's access log (bench/static.sh).

  judge.py run MANIFEST LOGSLICE NAME WALL CPU_S RSS_KB   -> one JSON line on stdout
  judge.py summary RESULTS.jsonl                          -> the median table

The log format is bench/static.sh's:
  $msec $request_time $server_addr:$server_port $connection $connection_requests
  $status $body_bytes_sent $request_uri "$http_user_agent"
$msec is when the answer was sent (ms resolution); a request started at
$msec - $request_time. Politeness is judged per server address: overlaps
are requests whose start is before the previous request's end (1 ms slack
for the log's resolution), connections counts the connection ids seen.
"""
import collections
import json
import statistics
import sys
from urllib.parse import urlsplit


def parse_log(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split(" ", 8)
            if len(parts) < 9:
                continue
            end, rt, addr, conn, _, status, nbytes, uri = parts[:8]
            out.append({
                "end": float(end), "start": float(end) - float(rt), "addr": addr, "conn": conn,
                "status": int(status), "bytes": int(nbytes), "uri": uri,
            })
    return out


def judge(manifest_path, log_path, name, wall, cpu, rss):
    m = json.load(open(manifest_path))
    allowed, disallowed = set(), set()
    for h in m["hosts"]:
        hp = urlsplit(h["origin"]).netloc
        for u in h["pages"]:
            allowed.add(hp + urlsplit(u).path)
        for u in h.get("disallowed") or []:
            disallowed.add(hp + urlsplit(u).path)
    reqs = parse_log(log_path)
    counts = collections.Counter()
    fetched = set()
    violations = 0
    per_host = collections.defaultdict(list)
    for r in reqs:
        key = r["addr"] + r["uri"].split("?", 1)[0]
        per_host[r["addr"]].append(r)
        if r["uri"] == "/robots.txt":
            continue
        counts[r["addr"] + r["uri"]] += 1  # the query makes another URL
        if key in disallowed:
            violations += 1
        if key in allowed and r["status"] == 200:
            fetched.add(key)
    dups = sum(n - 1 for n in counts.values() if n > 1)
    overlaps, conns, min_gap = 0, 0, None
    for addr, rs in per_host.items():
        rs.sort(key=lambda r: r["start"])
        conns = max(conns, len({r["conn"] for r in rs}))
        prev_end = None
        for r in rs:
            if prev_end is not None:
                gap = r["start"] - prev_end
                if gap < -0.001:
                    overlaps += 1
                min_gap = gap if min_gap is None else min(min_gap, gap)
            prev_end = r["end"] if prev_end is None else max(prev_end, r["end"])
    pages = len(fetched)
    wall = float(wall)
    return {
        "crawler": name, "wall_s": round(wall, 3), "requests": len(reqs), "pages": pages,
        "coverage": round(pages / max(len(allowed), 1), 4), "pages_per_s": round(pages / wall, 1) if wall > 0 else 0,
        "cpu_ms_per_page": round(float(cpu) * 1000 / max(pages, 1), 3), "peak_rss_mb": round(float(rss) / 1024, 1),
        "robots_violations": violations, "duplicates": dups, "overlaps": overlaps,
        "connections_per_host": conns, "min_gap_ms": round((min_gap or 0) * 1000, 1),
        "bytes": sum(r["bytes"] for r in reqs),
    }


def summary(path):
    runs = collections.defaultdict(list)
    for line in open(path):
        line = line.strip()
        if line:
            r = json.loads(line)
            runs[r["crawler"]].append(r)
    cols = ["wall_s", "pages_per_s", "cpu_ms_per_page", "peak_rss_mb", "coverage", "robots_violations",
            "duplicates", "overlaps", "connections_per_host", "min_gap_ms"]
    print("| crawler | runs | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for name, rs in runs.items():
        med = [statistics.median(r[c] for r in rs) for c in cols]
        print(f"| {name} | {len(rs)} | " + " | ".join(f"{v:g}" for v in med) + " |")
    print("\nmedians over the runs; overlaps, duplicates, robots violations: judged from nginx's access log")


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "run" and len(sys.argv) == 8:
        print(json.dumps(judge(*sys.argv[2:8])))
    elif len(sys.argv) == 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
    else:
        sys.exit(__doc__)
