// Crawl dashboard: polls /api/crawl every second and redraws; crawled
// text (URLs, errors, host names) is inserted with textContent only. A
// section with nothing to show is hidden, and no cell ever shows
// "undefined", "NaN" or "null": every value goes through text() or num().
// The chart is uPlot (static/vendor/uplot, embedded with its licence).
"use strict";
(function () {
  const $ = function (id) { return document.getElementById(id); };
  const DASH = "–"; // shown for a value the API did not give
  let ticks = 0;
  let plot = null; // the uPlot chart, made on the first series
  const AXIS = 50; // CSS pixels of each axis's ticks and values, its label beyond

  // text gives a cell's text: "" for a missing value, never "undefined".
  function text(v) {
    if (v === undefined || v === null) return "";
    if (typeof v === "number" && !Number.isFinite(v)) return DASH;
    return String(v);
  }

  // num formats a number with digits decimals, DASH when it is missing.
  function num(v, digits) {
    if (typeof v !== "number" || !Number.isFinite(v)) return DASH;
    return digits ? v.toFixed(digits) : v.toLocaleString("en-US");
  }

  function cell(t, cls) {
    const td = document.createElement("td");
    td.textContent = text(t);
    if (cls) td.className = cls;
    return td;
  }

  // fill replaces the rows of table id; a column is {get(row) → text or
  // Node, cls}; rowClass(row), when given, is the class of the row's tr.
  // It returns how many rows it wrote.
  function fill(id, rows, cols, rowClass) {
    const tbody = $(id).querySelector("tbody");
    tbody.replaceChildren();
    for (const r of rows || []) {
      const tr = document.createElement("tr");
      if (rowClass) tr.className = rowClass(r);
      for (const c of cols) {
        const v = c.get(r);
        if (v instanceof Node) {
          const td = cell("", c.cls);
          td.append(v);
          tr.append(td);
        } else {
          tr.append(cell(v, c.cls));
        }
      }
      tbody.append(tr);
    }
    return (rows || []).length;
  }

  // show hides the section id unless it has something to show.
  function show(id, visible) { $(id).hidden = !visible; }

  const col = function (key, digits) { return { get: function (r) { return num(r[key], digits); }, cls: "num" }; };
  const txt = function (key, cls) { return { get: function (r) { return text(r[key]); }, cls: cls }; };

  // wait says when a host may be fetched again: "fetching", "now", "in 0.4 s".
  function wait(h) {
    if (h.in_flight > 0) return "fetching";
    const ms = h.next_fetch_ms;
    if (typeof ms !== "number" || !(ms > 0)) return "now";
    if (ms < 60000) return "in " + (Math.ceil(ms / 100) / 10).toFixed(1) + " s";
    return "in " + (ms / 60000).toFixed(1) + " min";
  }

  // ms formats a duration in milliseconds: "250 ms", "1.5 s", "-1.3 s"
  // (a topic's slice left is negative once it overran its slice).
  function ms(v) {
    if (typeof v !== "number" || !Number.isFinite(v)) return DASH;
    if (Math.abs(v) < 1000) return v + " ms";
    return (v / 1000).toFixed(v % 1000 ? 1 : 0) + " s";
  }

  // chart draws pages/s (y) over local time (x). The y axis always starts
  // at 0; its tick labels are kept on the element (data-y-ticks) so that
  // the browser tests can check the scale that was drawn.
  function chart(series) {
    const el = $("chart");
    show("chart-section", series.length > 0);
    if (series.length === 0) return;
    const step = series[0].step || 1;
    const xs = series.map(function (p) { return p.t; });
    const ys = series.map(function (p) { return typeof p.pages_per_s === "number" ? p.pages_per_s : 0; });
    if (typeof uPlot === "undefined") {
      $("chart-scale").textContent = "the chart library did not load";
      return;
    }
    if (plot === null) {
      const yValues = function (u, splits) {
        const out = splits.map(function (v) { return v >= 10 || v === 0 ? v.toFixed(0) : v.toFixed(1); });
        el.dataset.yTicks = out.join(" ");
        return out;
      };
      const xValues = function (u, splits) {
        const out = splits.map(function (v) {
          const d = new Date(v * 1000);
          return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
        });
        el.dataset.xTicks = out.join(" ");
        return out;
      };
      plot = new uPlot({
        width: Math.max(300, el.clientWidth),
        height: 240,
        legend: { show: false },
        padding: [12, 40, 0, 0], // room for the last time label
        cursor: { show: false },
        scales: {
          x: { time: true },
          y: { range: function (u, min, max) { return [0, Math.max(1, max * 1.15)]; } },
        },
        axes: [
          { label: "time (local)", values: xValues, size: AXIS, incrs: [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400], stroke: "#4a5468", grid: { stroke: "#e6e9ef" } },
          { label: "pages/s", values: yValues, stroke: "#4a5468", grid: { stroke: "#e6e9ef" }, size: AXIS },
        ],
        series: [
          { label: "time" },
          { label: "pages/s", stroke: "#1a4fb4", width: 1.5, fill: "rgba(26,79,180,0.15)" },
        ],
        // The plot area in canvas pixels, for the browser tests to find
        // the axes' strips around it.
        hooks: { draw: [function (u) { el.dataset.plot = [u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height].map(Math.round).join(" "); }] },
      }, [xs, ys], el);
      el.dataset.xLabel = "time (local)";
      el.dataset.yLabel = "pages/s";
      window.addEventListener("resize", function () { plot.setSize({ width: Math.max(300, el.clientWidth), height: 240 }); });
    } else {
      plot.setData([xs, ys]);
    }
    let peak = 0;
    for (const y of ys) peak = Math.max(peak, y);
    el.dataset.points = String(xs.length);
    $("chart-scale").textContent = "peak " + peak.toFixed(1) + " pages/s · each point is the mean over " + step + " s";
  }

  function failureExamples(fc) {
    const ul = document.createElement("ul");
    ul.className = "examples";
    for (const ex of fc.examples || []) {
      const li = document.createElement("li");
      const u = document.createElement("span");
      u.className = "url";
      u.textContent = text(ex.url);
      li.append(u);
      if (ex.error) {
        const e = document.createElement("span");
        e.className = "muted";
        e.textContent = " (" + text(ex.error) + ")";
        li.append(e);
      }
      ul.append(li);
    }
    const more = (fc.urls || 0) - (fc.examples || []).length;
    if (more > 0) {
      const li = document.createElement("li");
      li.className = "muted";
      li.textContent = "… and " + more.toLocaleString("en-US") + " more (spider export lists every record)";
      ul.append(li);
    }
    return ul;
  }

  // configRows lists the crawl's settings as [name, value] pairs.
  function configRows(c) {
    const seeds = (c.seeds || []).join(" ") + (c.seeds_total > (c.seeds || []).length ? " … and " + (c.seeds_total - c.seeds.length) + " more" : "");
    const rows = [
      ["mode", c.mode === "topics" ? "topic-focused (--topics)" : "normal"],
      ["seeds", seeds],
      ["scope", c.scope + (c.scope_regexp ? " " + c.scope_regexp : "")],
      ["max depth", c.max_depth < 0 ? "unlimited" : text(c.max_depth) + (c.loose_depth ? " (levels overlap)" : " (level by level)")],
      ["max pages", c.max_pages > 0 ? num(c.max_pages) : "no limit"],
      ["concurrency", c.concurrency > 0 ? num(c.concurrency) + " workers" : "each node's own"],
      ["per host", num(c.per_host) + (c.per_host === 1 ? " connection" : " connections") + (c.per_ip ? " per IP address" : "")],
      ["delay", ms(c.delay_ms) + " from the previous request's " + (c.delay_from === "start" ? "start" : "end")],
      ["max rate", c.max_rate > 0 ? num(c.max_rate) + " requests/s" : "no cap"],
      ["retries", num(c.max_retries)],
      ["timeout", c.timeout_ms > 0 ? ms(c.timeout_ms) : "each node's own"],
      ["user agent", c.user_agent],
      ["robots.txt agent", c.robots_agent],
    ];
    return rows;
  }

  // scheduleRows lists a revisit schedule as [name, value] pairs: what is
  // scheduled, due now, next and failed, then this run's revisits when
  // the crawl runs in this process.
  function scheduleRows(sc) {
    const rows = [["URLs scheduled", num(sc.scheduled)], ["due now", num(sc.overdue)],
      ["next due", sc.next_due ? new Date(sc.next_due).toLocaleTimeString() : DASH], ["failed, awaiting retry", num(sc.failed)]];
    const r = sc.run;
    if (r) {
      rows.push(["revisits this run", num(r.revisits)], ["304 not modified", num(r.not_modified)], ["changed", num(r.changed)],
        ["brought forward by sitemap lastmod", num(r.hinted)]);
    }
    return rows;
  }

  function render(st) {
    const state = $("state");
    state.textContent = text(st.state);
    state.className = "state " + text(st.state);
    $("summary").textContent = num(st.pages) + " URLs completed · " + num(st.pages_per_s, 1) + " pages/s · " + num((st.bytes || 0) / 1048576, 1) + " MiB stored · source: " + text(st.source);
    $("updated").textContent = "updated " + new Date(st.updated).toLocaleTimeString() + " (" + (++ticks) + ")";
    $("updated").dataset.ticks = String(ticks);
    $("summary").dataset.pages = String(st.pages);
    chart(st.series || []);

    const clock = !!st.host_clock;
    for (const th of document.querySelectorAll("#hosts th.clock")) th.hidden = !clock;
    const hostCols = [txt("host", "host"), col("pages"), col("errors"), col("mean_latency_ms", 1)];
    if (clock) hostCols.push(col("queued"), { get: wait, cls: "wait" });
    const nh = fill("hosts", st.hosts, hostCols);
    show("hosts-section", nh > 0);
    $("hosts-caption").textContent = (st.hosts_total > nh ? "the " + nh + " hosts with the most pages, of " + num(st.hosts_total) : num(nh) + (nh === 1 ? " host" : " hosts")) +
      "; errors are URLs whose last fetch failed; latency is the mean fetch time" +
      (clock ? "; next allowed fetch by the crawl's politeness (delay, Crawl-delay, back-off)" : "");

    const nf = fill("failures", st.failures, [txt("class"), col("urls"), txt("hint"), { get: failureExamples, cls: "url" }]);
    show("failures-section", nf > 0);
    let failed = 0;
    for (const fc of st.failures || []) failed += fc.urls || 0;
    $("failures-caption").textContent = num(failed) + " of " + num(st.pages) + " URLs failed";

    fill("rows", st.rows, [txt("name"), col("count")]);
    const no = fill("outcomes", st.outcomes, [txt("name"), col("count")]);
    show("outcomes-section", no > 0);

    const q = st.queue;
    const qrows = q ? [["queued", num(q.queued)], ["in flight", num(q.in_flight)], ["hosts with URLs", num(q.hosts)]] : [];
    if (q && st.source === "master-worker") qrows.push(["srq", num(q.srq)], ["nrq", num(q.nrq)], ["trq (free)", num(q.trq)]);
    show("queue-section", fill("queue", qrows, [{ get: function (r) { return r[0]; } }, { get: function (r) { return r[1]; }, cls: "num" }]) > 0);

    // The revisit schedule (issue 26): absent for a crawl without one.
    const sc = st.schedule;
    const srows = sc ? scheduleRows(sc) : [];
    show("schedule-section", fill("schedule", srows, [{ get: function (r) { return r[0]; } }, { get: function (r) { return r[1]; }, cls: "num" }]) > 0);
    $("schedule-caption").textContent = sc ? "as of " + new Date(sc.at).toLocaleTimeString() + "; spider crawl --retry-failed retries the failed URLs now" : "";

    const crows = st.config ? configRows(st.config) : [];
    show("config-section", fill("config", crows, [{ get: function (r) { return r[0]; }, cls: "key" }, { get: function (r) { return text(r[1]); }, cls: "value" }]) > 0);

    show("nodes-section", fill("nodes", st.nodes, [txt("id"), txt("role"), txt("state"), col("weight"), col("buckets"), col("pages_per_s", 1), col("fetched"), col("queue"), col("inbox"), col("in_flight"),
      { get: function (r) { return r.idle ? "idle" : "busy"; } }]) > 0);
    const nt = fill("topics", st.topics, [txt("name"),
      { get: function (r) { return r.file_priority !== undefined && r.file_priority !== r.priority ? num(r.priority) + " (file " + num(r.file_priority) + ")" : num(r.priority); }, cls: "num" },
      txt("state"), { get: function (r) { return ms(r.slice_total_ms); }, cls: "num" }, { get: function (r) { return ms(r.slice_remain_ms); }, cls: "num" },
      col("pages"), col("relevant"), col("queued"), col("preemptions"), col("blocked")]);
    show("topics-section", nt > 0);
    // A topic whose URLs robots.txt all refused says so (the crawl goes on
    // without it; it is not a hang).
    const notes = (st.topics || []).filter(function (r) { return r.note; }).map(function (r) { return r.name + ": " + r.note; });
    $("topics-notes").textContent = notes.join("; ");
    show("topics-notes", notes.length > 0);
    $("topics-caption").textContent = nt > 0 ? "PQ-MCSA scheduler" + (st.topics_at ? ", as of " + new Date(st.topics_at).toLocaleTimeString() : "") +
      "; a higher priority pre-empts a lower one, equal priorities share time slices" : "";
    topicChoices(st.topics || []);
    // A dead crawl node's row is marked (class "dead"): greyed, its alive
    // cell in red.
    show("topic-nodes-section", fill("topic-nodes", st.topic_nodes, [col("worker"), txt("node"), { get: function (r) { return r.alive ? "yes" : "no (its tasks go out again)"; }, cls: "alive" },
      col("in_flight"), col("queued"), col("pages_per_sec", 1), col("errors"), col("fetched"), col("buckets"),
      { get: function (r) { return r.last_beat ? new Date(r.last_beat).toLocaleTimeString() : DASH; } }],
    function (r) { return r.alive ? "" : "dead"; }) > 0);
    show("errors-section", fill("errors", st.recent_errors, [
      { get: function (r) { return r.at ? new Date(r.at).toLocaleTimeString() : ""; } },
      { get: function (r) { return r.status && String(r.status) !== r.outcome ? text(r.outcome) + " (" + r.status + ")" : text(r.outcome); } },
      txt("url", "url"), txt("error")]) > 0);
    $("control").hidden = !st.control;
  }

  // topicChoices keeps the priority control's topic list in step with the
  // crawl's topics (the user's choice is kept while it is still there).
  function topicChoices(rows) {
    const sel = $("priority-topic");
    const names = rows.map(function (r) { return text(r.name); });
    const have = Array.from(sel.options).map(function (o) { return o.value; });
    $("priority-control").hidden = names.length === 0;
    if (names.join("\n") === have.join("\n")) return;
    const keep = sel.value;
    sel.replaceChildren();
    for (const n of names) {
      const o = document.createElement("option");
      o.value = n;
      o.textContent = n;
      sel.append(o);
    }
    if (names.includes(keep)) sel.value = keep;
  }

  async function poll() {
    try {
      const r = await fetch("/api/crawl", { headers: { Accept: "application/json" } });
      const body = await r.json();
      if (r.ok) render(body);
      else $("summary").textContent = text(body.error) || ("error " + r.status);
    } catch (e) {
      $("summary").textContent = "cannot reach the server: " + text(e.message);
    }
    setTimeout(poll, 1000);
  }

  async function control(path, body, method) {
    const out = $("control-result");
    try {
      const r = await fetch(path, {
        method: method || "POST",
        headers: { Authorization: "Bearer " + $("token").value, "Content-Type": "application/json" },
        body: body ? JSON.stringify(body) : "",
      });
      const ans = await r.json();
      out.textContent = r.ok ? text(ans.action) + ": done" + (typeof ans.added === "number" ? " (" + ans.added + " new)" : "") : text(ans.error);
      out.className = r.ok ? "muted" : "error"; // a refusal shows in red
    } catch (e) {
      out.textContent = "cannot reach the server: " + text(e.message);
      out.className = "error";
    }
  }

  $("pause").addEventListener("click", function () { control("/api/crawl/pause"); });
  $("resume").addEventListener("click", function () { control("/api/crawl/resume"); });
  $("stop").addEventListener("click", function () { control("/api/crawl/stop"); });
  $("add-seed").addEventListener("click", function () { control("/api/crawl/seeds", { urls: [$("seed").value] }); });
  $("set-priority").addEventListener("click", function () {
    const topic = $("priority-topic").value;
    // A field that holds no whole number (empty, "2.5", or text the
    // browser dropped) goes as null, which the server refuses with its
    // message ("give priority as a whole number from 0 to 9"): never as a
    // silent 0, nor as a JSON decoding error naming Go types.
    const raw = $("priority-value").value.trim();
    const p = raw === "" ? NaN : Number(raw);
    control("/api/topics/" + encodeURIComponent(topic) + "/priority", { priority: Number.isInteger(p) ? p : null }, "PUT");
  });
  if ($("state").textContent !== "no crawl") poll();
})();
