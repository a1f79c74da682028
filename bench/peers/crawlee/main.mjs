// Crawlee peer of spider's crawler benchmarks (bench/peerbench).
//
// It does the job `spider crawl` does with Crawlee's own machinery: a
// CheerioCrawler (HTTP + cheerio, no browser) with maxConcurrency =
// minConcurrency = --concurrency (a fixed pool: the autoscaler would otherwise
// start at 1 and judge the shared machine "overloaded"), respectRobotsTxtFile
// with the agent token "spider", sameDomainDelaySecs = --delay, maxCrawlDepth
// = --max-depth (seeds are depth 0), Crawlee's request-queue de-dup (by
// uniqueKey), following a/area/link href (rel=nofollow skipped), iframe/frame
// src and meta refresh URLs, skipping the same path suffixes. Crawlee has no
// limit on requests in flight per host; that is reported, not emulated.
//
// Host names are resolved from a curl-style HOST:PORT:ADDR file by replacing
// dns.lookup, which Node's net module calls for every connection: Crawlee
// fetches robots.txt with its own got-scraping call that no hook reaches, so
// a per-request option would not cover it.
//
// It prints one JSON line at the end:
//
//	{"crawler":"crawlee","pages":N,"errors":N,"seconds":S}
//
// Usage: node main.mjs [--resolve-file F] [--max-depth N] [--concurrency N]
//        [--delay SECONDS] [--suffixes .png,...] [--user-agent UA] SEED_URL...
import dns from 'node:dns';
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { parseResolve, refreshURL } from './lib.mjs';

const DEFAULT_SUFFIXES = '.png,.jpg,.jpeg,.gif,.css,.js,.pdf,.zip,.ico,.svg,.woff,.mp4';
const DEFAULT_UA = 'spider/0.1 (+https://github.com/spider-crawler/spider)';

function fail(msg) {
    console.error(`crawlee-peer: ${msg}`);
    process.exit(2);
}

// readResolveFile returns a Map host → address from the file at path ("" gives
// an empty map); it ends the process with a message on a bad file.
function readResolveFile(path) {
    if (!path) return new Map();
    try {
        return parseResolve(fs.readFileSync(path, 'utf8'));
    } catch (e) {
        return fail(`cannot use resolve file ${path}: ${e.message}`);
    }
}

let opts;
try {
    opts = parseArgs({
        allowPositionals: true,
        options: {
            'resolve-file': { type: 'string', default: '' },
            'max-depth': { type: 'string', default: '5' },
            concurrency: { type: 'string', default: '32' },
            delay: { type: 'string', default: '0' },
            suffixes: { type: 'string', default: DEFAULT_SUFFIXES },
            'user-agent': { type: 'string', default: DEFAULT_UA },
        },
    });
} catch (e) {
    fail(`${e.message}; usage: node main.mjs [--resolve-file F] [--max-depth N] [--concurrency N] [--delay SECONDS] SEED_URL...`);
}
const v = opts.values;
const maxDepth = Number.parseInt(v['max-depth'], 10);
const concurrency = Number.parseInt(v.concurrency, 10);
const delay = Number.parseFloat(v.delay);
if (Number.isNaN(maxDepth)) fail(`cannot use --max-depth ${v['max-depth']}: want an integer`);
if (!(concurrency >= 1)) fail(`cannot use --concurrency ${v.concurrency}: want at least 1`);
if (!(delay >= 0)) fail(`cannot use --delay ${v.delay}: want seconds ≥ 0`);
if (opts.positionals.length === 0) fail('cannot crawl without a seed URL: give at least one');
const suffixes = v.suffixes.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

const table = readResolveFile(v['resolve-file']);
const lookup = dns.lookup;
dns.lookup = function resolveFromTable(hostname, options, callback) {
    if (typeof options === 'function') {
        callback = options;
        options = {};
    } else if (typeof options === 'number') {
        options = { family: options };
    }
    const addr = table.get(String(hostname).toLowerCase());
    if (addr === undefined) return lookup.call(dns, hostname, options, callback);
    const family = addr.includes(':') ? 6 : 4;
    process.nextTick(() => {
        if (options && options.all) callback(null, [{ address: addr, family }]);
        else callback(null, addr, family);
    });
    return {};
};

// Crawlee is imported after dns.lookup is replaced, so nothing keeps the original.
const { CheerioCrawler, log, LogLevel } = await import('@crawlee/cheerio');
log.setLevel(LogLevel.ERROR);

let pages = 0;
let errors = 0;
const crawler = new CheerioCrawler({
    minConcurrency: concurrency,
    maxConcurrency: concurrency,
    sameDomainDelaySecs: delay,
    maxCrawlDepth: maxDepth >= 0 ? maxDepth : undefined,
    respectRobotsTxtFile: { userAgent: 'spider' },
    useSessionPool: false,
    persistCookiesPerSession: false,
    preNavigationHooks: [
        (_ctx, gotOptions) => {
            gotOptions.headers = { ...gotOptions.headers, 'user-agent': v['user-agent'] };
        },
    ],
    async requestHandler({ request, $, enqueueLinks }) {
        pages++;
        if (maxDepth >= 0 && (request.crawlDepth ?? 0) >= maxDepth) return;
        let base = request.loadedUrl || request.url;
        const baseHref = $('base[href]').first().attr('href');
        if (baseHref) {
            try {
                base = new URL(baseHref.trim(), base).href;
            } catch {
                // an unparsable <base href> is ignored, as browsers do
            }
        }
        const refs = [];
        $('a[href], area[href], link[href]').each((_, el) => {
            const rel = ($(el).attr('rel') || '').toLowerCase().split(/\s+/);
            if (!rel.includes('nofollow')) refs.push($(el).attr('href'));
        });
        $('iframe[src], frame[src]').each((_, el) => refs.push($(el).attr('src')));
        $('meta[http-equiv][content]').each((_, el) => {
            if (($(el).attr('http-equiv') || '').trim().toLowerCase() === 'refresh') {
                const u = refreshURL($(el).attr('content'));
                if (u) refs.push(u);
            }
        });
        const urls = [];
        for (const ref of refs) {
            let u;
            try {
                u = new URL(ref.trim(), base);
            } catch {
                continue;
            }
            if (u.protocol !== 'http:' && u.protocol !== 'https:') continue;
            u.hash = '';
            const p = u.pathname.toLowerCase();
            if (suffixes.some((s) => p.endsWith(s))) continue;
            urls.push(u.href);
        }
        if (urls.length > 0) await enqueueLinks({ urls, strategy: 'all' });
    },
    failedRequestHandler() {
        pages++;
        errors++;
    },
});

const start = process.hrtime.bigint();
await crawler.run(opts.positionals);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log(JSON.stringify({ crawler: 'crawlee', pages, errors, seconds }));
