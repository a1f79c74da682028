// Crawl dashboard: polls /api/crawl every second and redraws; crawled
// text (URLs, errors, host names) is inserted with textContent only.
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const W = 600, H = 160;
  const $ = function (id) { return document.getElementById(id); };
  let ticks = 0;

  function cell(text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function fill(id, rows, cols) {
    const tbody = $(id).querySelector("tbody");
    tbody.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      for (const c of cols) tr.append(cell(c.get(r), c.cls));
      tbody.append(tr);
    }
  }

  const num = function (key, digits) {
    return { get: function (r) { const v = r[key]; return digits ? v.toFixed(digits) : String(v); }, cls: "num" };
  };
  const txt = function (key, cls) { return { get: function (r) { return String(r[key]); }, cls: cls }; };

  function chart(series) {
    const svg = $("chart");
    svg.replaceChildren();
    let peak = 1;
    for (const p of series) peak = Math.max(peak, p.pages_per_s);
    for (let i = 1; i < 4; i++) {
      const l = document.createElementNS(SVG, "line");
      l.setAttribute("x1", "0"); l.setAttribute("x2", String(W));
      l.setAttribute("y1", String(H * i / 4)); l.setAttribute("y2", String(H * i / 4));
      l.setAttribute("class", "grid-line");
      svg.append(l);
    }
    if (series.length === 0) {
      $("chart-scale").textContent = "no pages yet";
      return;
    }
    const n = Math.max(series.length - 1, 1);
    const pts = series.map(function (p, i) {
      return [(i / n) * W, H - (p.pages_per_s / peak) * (H - 4)];
    });
    const line = pts.map(function (p, i) { return (i ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1); }).join(" ");
    const area = document.createElementNS(SVG, "path");
    area.setAttribute("d", line + " L" + W + " " + H + " L0 " + H + " Z");
    area.setAttribute("class", "area");
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", line);
    path.setAttribute("class", "line");
    svg.append(area, path);
    const step = series[0].step;
    const from = new Date(series[0].t * 1000), to = new Date((series[series.length - 1].t + step) * 1000);
    $("chart-scale").textContent = "peak " + peak.toFixed(1) + " pages/s · " + from.toLocaleTimeString() + " – " + to.toLocaleTimeString() + " · " + step + " s per point";
  }

  function render(st) {
    const state = $("state");
    state.textContent = st.state;
    state.className = "state " + st.state;
    $("summary").textContent = st.pages + " URLs completed · " + st.pages_per_s.toFixed(1) + " pages/s · " + (st.bytes / 1048576).toFixed(1) + " MiB stored · source: " + st.source;
    $("updated").textContent = "updated " + new Date(st.updated).toLocaleTimeString() + " (" + (++ticks) + ")";
    $("updated").dataset.ticks = String(ticks);
    $("summary").dataset.pages = String(st.pages);
    chart(st.series);
    fill("rows", st.rows, [txt("name"), num("count")]);
    fill("outcomes", st.outcomes, [txt("name"), num("count")]);
    fill("hosts", st.top_hosts, [txt("name"), num("count")]);
    const q = st.queue;
    const qrows = q ? [["queued", q.queued], ["in flight", q.in_flight], ["hosts with URLs", q.hosts]] : [["queue depths", "not known for a data directory read from outside the crawl"]];
    if (q && st.source === "master-worker") qrows.push(["srq", q.srq], ["nrq", q.nrq], ["trq (free)", q.trq]);
    fill("queue", qrows, [{ get: function (r) { return r[0]; } }, { get: function (r) { return String(r[1]); }, cls: "num" }]);
    fill("nodes", st.nodes, [txt("id"), txt("role"), num("weight"), num("buckets"), num("pages_per_s", 1), num("queue"), num("inbox"), num("in_flight"), txt("idle")]);
    fill("topics", st.topics, [txt("name"), num("priority"), num("pages"), num("queued")]);
    fill("errors", st.recent_errors, [
      { get: function (r) { return new Date(r.at).toLocaleTimeString(); } },
      { get: function (r) { return r.status ? r.outcome + " (" + r.status + ")" : r.outcome; } },
      txt("url", "url"), txt("error")]);
    $("control").hidden = !st.control;
  }

  async function poll() {
    try {
      const r = await fetch("/api/crawl", { headers: { Accept: "application/json" } });
      const body = await r.json();
      if (r.ok) render(body);
      else $("summary").textContent = body.error || ("error " + r.status);
    } catch (e) {
      $("summary").textContent = "cannot reach the server: " + e.message;
    }
    setTimeout(poll, 1000);
  }

  async function control(path, body) {
    const out = $("control-result");
    try {
      const r = await fetch(path, {
        method: "POST",
        headers: { Authorization: "Bearer " + $("token").value, "Content-Type": "application/json" },
        body: body ? JSON.stringify(body) : "",
      });
      const ans = await r.json();
      out.textContent = r.ok ? ans.action + ": done" + (ans.added !== undefined ? " (" + ans.added + " new)" : "") : ans.error;
    } catch (e) {
      out.textContent = "cannot reach the server: " + e.message;
    }
  }

  $("pause").addEventListener("click", function () { control("/api/crawl/pause"); });
  $("resume").addEventListener("click", function () { control("/api/crawl/resume"); });
  $("stop").addEventListener("click", function () { control("/api/crawl/stop"); });
  $("add-seed").addEventListener("click", function () { control("/api/crawl/seeds", { urls: [$("seed").value] }); });
  if ($("state").textContent !== "no crawl") poll();
})();
