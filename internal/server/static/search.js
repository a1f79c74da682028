// Search page: results update in place as the query changes (no reload).
// Everything from the index is inserted with textContent, never as HTML.
"use strict";
(function () {
  const form = document.getElementById("search");
  const q = document.getElementById("q");
  const signals = document.getElementById("signals");
  const status = document.getElementById("status");
  const results = document.getElementById("results");
  const pager = document.getElementById("pager");
  const pageSize = 10;
  let timer = null;
  let seq = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // safeHref keeps http(s) links only.
  function safeHref(u) {
    try {
      const p = new URL(u);
      return p.protocol === "http:" || p.protocol === "https:" ? p.href : "#";
    } catch (e) {
      return "#";
    }
  }

  function render(ans, page) {
    results.replaceChildren();
    pager.replaceChildren();
    if (ans.total === 0) {
      status.textContent = "No page matches “" + ans.query + "”.";
      return;
    }
    const first = ans.offset + 1, last = ans.offset + ans.hits.length;
    status.textContent = "Results " + first + "–" + last + " of " + ans.total + " (" + (ans.cached ? "cached" : ans.took_ms.toFixed(1) + " ms") + ")";
    results.start = first;
    for (const h of ans.hits) {
      const li = el("li", "hit");
      const a = el("a", "title", h.title || h.url);
      a.href = safeHref(h.url);
      a.rel = "noopener noreferrer nofollow";
      const u = el("div", "url", h.url);
      if (h.fetched_at) {
        const t = el("time", "", new Date(h.fetched_at).toUTCString().replace(/^\w+, 0?/, "").replace(/:\d\d GMT$/, " UTC"));
        t.dateTime = h.fetched_at;
        const f = el("span", "fetched", "fetched ");
        f.append(t);
        u.append(" · ", f);
      }
      li.append(a, u);
      const p = el("p", "snippet");
      for (const f of h.snippet) p.append(f.match ? el("mark", "", f.text) : document.createTextNode(f.text));
      li.append(p);
      if (signals.checked) {
        const s = el("div", "signals", "score " + h.score.toFixed(4) + " · BM25 " + h.bm25.toFixed(4) + " · PageRank " + h.pagerank.toFixed(6));
        if (h.explain) s.append(el("pre", "explain", h.explain));
        li.append(s);
      }
      results.append(li);
    }
    const pages = Math.ceil(ans.total / pageSize);
    if (page > 1) pager.append(button("← Previous", "prev", page - 1));
    pager.append(el("span", "", "page " + page + " of " + pages));
    if (page < pages && ans.offset + pageSize <= 10000) pager.append(button("Next →", "next", page + 1));
  }

  function button(text, id, page) {
    const a = el("a", "", text);
    a.id = id;
    a.href = pageURL(page);
    a.addEventListener("click", function (ev) { ev.preventDefault(); run(page); });
    return a;
  }

  function pageURL(page) {
    const u = new URLSearchParams({ q: q.value.trim() });
    if (page > 1) u.set("p", String(page));
    if (signals.checked) u.set("signals", "1");
    return "/?" + u.toString();
  }

  async function run(page) {
    const query = q.value.trim();
    const my = ++seq;
    history.replaceState(null, "", query ? pageURL(page) : "/");
    if (!query) {
      results.replaceChildren();
      pager.replaceChildren();
      status.textContent = "";
      return;
    }
    const u = new URLSearchParams({ q: query, limit: String(pageSize), offset: String((page - 1) * pageSize) });
    if (signals.checked) u.set("explain", "true");
    try {
      const r = await fetch("/api/search?" + u.toString(), { headers: { Accept: "application/json" } });
      const body = await r.json();
      if (my !== seq) return; // a newer query is on its way
      if (!r.ok) {
        results.replaceChildren();
        pager.replaceChildren();
        status.replaceChildren(el("span", "error", body.error || ("error " + r.status)));
        return;
      }
      render(body, page);
    } catch (e) {
      if (my === seq) status.replaceChildren(el("span", "error", "cannot reach the server: " + e.message));
    }
  }

  q.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { run(1); }, 250);
  });
  signals.addEventListener("change", function () { run(1); });
  form.addEventListener("submit", function (ev) { ev.preventDefault(); clearTimeout(timer); run(1); });
})();
