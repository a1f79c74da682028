// Helpers of the Crawlee peer (main.mjs), apart so that test.mjs can load
// them without starting a crawl.

// parseResolve returns a Map host → address from curl-style HOST:PORT:ADDR
// lines (blank lines and # comments skipped); it throws on a malformed line.
export function parseResolve(text) {
    const table = new Map();
    text.split('\n').forEach((raw, i) => {
        const line = raw.trim();
        if (line === '' || line.startsWith('#')) return;
        const a = line.indexOf(':');
        const b = a < 0 ? -1 : line.indexOf(':', a + 1);
        if (a <= 0 || b <= a + 1 || b === line.length - 1) {
            throw new Error(`cannot use resolve line ${i + 1} ${JSON.stringify(line)}: want HOST:PORT:ADDR`);
        }
        table.set(line.slice(0, a).toLowerCase(), line.slice(b + 1).replace(/^\[|\]$/g, ''));
    });
    return table;
}

// refreshURL returns the URL of a meta refresh content ("0; url=/next") or null.
export function refreshURL(content) {
    const m = /^[^;,]*[;,]\s*url\s*=\s*(.*)$/is.exec(content || '');
    if (!m) return null;
    const u = m[1].trim().replace(/^["']|["']$/g, '');
    return u === '' ? null : u;
}
