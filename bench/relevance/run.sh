#!/usr/bin/env bash
# Issue #27's judged relevance evaluation: P@3 and NDCG@10 of BM25 alone,
# BM25F and each with PageRank at a few weights, on a websim web and on the
# PostgreSQL 15 documentation (Debian package postgresql-doc-15, served on
# loopback and crawled). Prints the tables (bench/RESULTS.md, "Ranking:
# BM25F and PageRank"); also written to $RELEVANCE_OUT if set.
#
#   bench/relevance/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -d /usr/share/doc/postgresql-doc-15/html ]; then
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y --no-install-recommends postgresql-doc-15 >/dev/null ||
			{ apt-get update >/dev/null && apt-get install -y --no-install-recommends postgresql-doc-15 >/dev/null; }
	else
		echo "run.sh: install the judged documentation first: sudo apt-get install postgresql-doc-15" >&2
		exit 1
	fi
fi
SPIDER_RELEVANCE=1 go test ./bench/relevance -run TestRelevance -v -count=1 -timeout 30m
