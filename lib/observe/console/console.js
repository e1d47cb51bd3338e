"use strict";
// The beamlet console: one page, four views chosen by the URL's fragment. Everything it shows
// comes from /console/api/ (JSON) and /console/api/events (server-sent samples); tables are
// sorted and paged by the server, so the page stays light however many processes there are.
(function () {
  const view = document.getElementById("view");
  const statusLine = document.getElementById("status");
  const streamBadge = document.getElementById("stream");
  const tokenInput = document.getElementById("token");
  tokenInput.value = sessionStorage.getItem("beamlet-token") || "";
  tokenInput.addEventListener("change", () => sessionStorage.setItem("beamlet-token", tokenInput.value));

  const live = { history: [], interval: 1000, schedulers: 0, actions: false, received: 0 };
  let timer = null;        // the current view's refresh
  let generation = 0;      // bumped by each navigation: late answers for an old view are dropped
  let firstRender = true;

  // -- helpers ------------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined)
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return e;
  }
  async function api(path) {
    const r = await fetch(path, { cache: "no-store" });
    if (!r.ok) throw new Error(r.status + " " + (await r.text()).trim());
    return r.json();
  }
  const fmt = (n) => Number(n).toLocaleString("en-US");
  // An axis label: whole numbers, unless the axis is too short for them to differ.
  const tick = (v, max) => (max < 8 ? v.toFixed(1) : fmt(Math.round(v)));
  function bytes(n) {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; ++i; }
    return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
  }
  const pidLink = (p) => el("a", { href: "#/process/" + encodeURIComponent(p) }, p);
  function rendered() {
    if (firstRender) { firstRender = false; performance.mark("console-rendered"); }
  }
  function setStatus(text) { statusLine.textContent = text; }
  function every(ms, f) { clearInterval(timer); timer = setInterval(f, ms); }

  // -- charts (canvas, no library) -----------------------------------------------------------
  const palette = ["#2b6cb0", "#c05621", "#2f855a", "#805ad5", "#b7791f", "#d53f8c", "#319795",
    "#718096"];
  function drawChart(canvas, series, opts) {
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth, h = canvas.clientHeight;
    if (canvas.width !== w * ratio) { canvas.width = w * ratio; canvas.height = h * ratio; }
    const g = canvas.getContext("2d");
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, w, h);
    const left = 56, bottom = h - 16, top = 6, right = w - 6;
    let max = opts.max || 0;
    for (const s of series) for (const v of s.values) max = Math.max(max, v);
    if (max <= 0) max = 1;
    g.strokeStyle = "#e2e8f0"; g.fillStyle = "#6b6b70"; g.font = "11px sans-serif";
    for (let i = 0; i <= 4; ++i) {
      const y = bottom - (bottom - top) * i / 4;
      g.beginPath(); g.moveTo(left, y); g.lineTo(right, y); g.stroke();
      g.fillText(opts.label(max * i / 4, max), 2, y + 4);
    }
    const n = Math.max(2, live.history.length);
    series.forEach((s, k) => {
      g.strokeStyle = palette[k % palette.length]; g.lineWidth = 1.5; g.beginPath();
      s.values.forEach((v, i) => {
        const x = left + (right - left) * (i + n - s.values.length) / (n - 1);
        const y = bottom - (bottom - top) * v / max;
        if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
      });
      g.stroke();
    });
    g.fillStyle = "#6b6b70";
    g.fillText(Math.round(n * live.interval / 1000) + " s", left, h - 2);
  }

  // -- the live stream ------------------------------------------------------------------------
  let source = null;
  async function loadHistory() {
    const o = await api("/console/api/overview");
    live.history = o.history; live.interval = o.interval_ms; live.schedulers = o.schedulers;
    live.actions = o.actions;
  }
  function connect() {
    source = new EventSource("/console/api/events");
    source.onopen = () => {
      streamBadge.textContent = "live"; streamBadge.className = "stream on";
      // Samples taken while the stream was down are in the server's history.
      loadHistory().then(() => { if (route().name === "overview") drawOverview(); }).catch(() => {});
    };
    source.onerror = () => {
      // EventSource reconnects by itself (the server asks for 2 s); the page keeps working.
      streamBadge.textContent = "reconnecting"; streamBadge.className = "stream off";
    };
    source.onmessage = (ev) => {
      const s = JSON.parse(ev.data);
      live.history.push(s);
      const keep = Math.max(60, Math.round(300000 / live.interval));
      if (live.history.length > keep) live.history.splice(0, live.history.length - keep);
      ++live.received;
      document.body.dataset.samples = String(live.received);
      if (route().name === "overview") drawOverview();
    };
  }

  // -- overview -------------------------------------------------------------------------------
  function showOverview() {
    view.replaceChildren(
      el("div", { class: "cards", id: "cards" }),
      el("div", { class: "charts" },
        chartBox("Scheduler utilisation", "chart-util"),
        chartBox("Run queues", "chart-runq"),
        chartBox("Messages delivered per second", "chart-msgs"),
        chartBox("Processes", "chart-procs"),
        chartBox("Spawns and exits per second", "chart-spawns"),
        chartBox("Resident memory", "chart-rss")));
    loadHistory().then(drawOverview).catch((e) => setStatus("overview: " + e.message));
  }
  function chartBox(title, id) {
    return el("div", { class: "chart" }, el("h3", {}, title), el("canvas", { id }));
  }
  function drawOverview() {
    const cards = document.getElementById("cards");
    if (!cards) return;
    const h = live.history, last = h[h.length - 1];
    if (!last) { cards.replaceChildren(el("p", { class: "muted" }, "Waiting for the first sample…")); rendered(); return; }
    const util = last.utilisation.length
      ? Math.round(100 * last.utilisation.reduce((a, b) => a + b, 0) / last.utilisation.length) + " %" : "n/a";
    const card = (label, value, id) => el("div", { class: "card" },
      el("div", { class: "label" }, label), el("div", { class: "value", id }, value));
    cards.replaceChildren(
      card("Processes", fmt(last.processes), "card-processes"),
      card("Schedulers busy", util, "card-util"),
      card("Run queue", fmt(last.run_queues.reduce((a, b) => a + b, 0) + last.global_queue), "card-runq"),
      card("Messages / s", fmt(Math.round(last.messages_per_s)), "card-msgs"),
      card("Timers", fmt(last.timers), "card-timers"),
      card("Memory (RSS)", bytes(last.rss_bytes), "card-rss"),
      card("Queue alarms on", fmt(last.alarms_active), "card-alarms"),
      ...Object.entries(last.gauges || {}).map(([name, v]) =>
        card(name[0].toUpperCase() + name.slice(1), fmt(v), "card-gauge-" + name)));
    const perScheduler = (key) => (last[key] || []).map((_, i) => ({ values: h.map((s) => (s[key] || [])[i] || 0) }));
    drawChart(document.getElementById("chart-util"), perScheduler("utilisation"),
      { max: 1, label: (v) => Math.round(v * 100) + " %" });
    drawChart(document.getElementById("chart-runq"), perScheduler("run_queues"), { label: tick });
    drawChart(document.getElementById("chart-msgs"), [{ values: h.map((s) => s.messages_per_s) }],
      { label: tick });
    drawChart(document.getElementById("chart-procs"), [{ values: h.map((s) => s.processes) }],
      { label: tick });
    drawChart(document.getElementById("chart-spawns"),
      [{ values: h.map((s) => s.spawns_per_s) }, { values: h.map((s) => s.exits_per_s) }],
      { label: tick });
    drawChart(document.getElementById("chart-rss"), [{ values: h.map((s) => s.rss_bytes) }], { label: bytes });
    setStatus(h.length + " samples, one every " + live.interval + " ms; " + live.schedulers + " schedulers");
    rendered();
  }

  // -- processes ------------------------------------------------------------------------------
  const table = { sort: "message_queue_len", order: "desc", filter: "", offset: 0, n: 50 };
  const columns = [
    ["pid", "pid", false], ["registered_name", "name", false], ["initial_call", "initial call", false],
    ["message_queue_len", "queue", true], ["memory", "memory", true], ["reductions", "reductions", true]];
  function showProcesses() {
    const filter = el("input", { type: "search", id: "filter", placeholder: "name or initial call" });
    filter.value = table.filter;
    let debounce = null;
    filter.addEventListener("input", () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => { table.filter = filter.value; table.offset = 0; loadProcesses(); }, 250);
    });
    const prev = el("button", { id: "prev", onclick: () => { table.offset = Math.max(0, table.offset - table.n); loadProcesses(); } }, "‹ previous");
    const next = el("button", { id: "next", onclick: () => { table.offset += table.n; loadProcesses(); } }, "next ›");
    const head = el("tr", {}, ...columns.map(([key, label, num]) => {
      const th = el("th", { class: "sortable" + (num ? " num" : ""), "data-key": key }, label);
      th.addEventListener("click", () => {
        if (table.sort === key) table.order = table.order === "desc" ? "asc" : "desc";
        else { table.sort = key; table.order = key === "pid" ? "asc" : "desc"; }
        table.offset = 0; loadProcesses();
      });
      return th;
    }));
    view.replaceChildren(
      el("div", { class: "toolbar" }, filter, prev, next, el("span", { id: "range", class: "muted" })),
      el("table", { id: "processes" }, el("thead", {}, head), el("tbody", {})));
    loadProcesses();
    every(5000, loadProcesses);
  }
  async function loadProcesses() {
    const g = generation;
    const q = new URLSearchParams({ sort: table.sort, order: table.order, filter: table.filter,
      offset: table.offset, n: table.n });
    let page;
    try { page = await api("/console/api/processes?" + q); } catch (e) { setStatus("processes: " + e.message); return; }
    if (g !== generation) return;
    const body = document.querySelector("#processes tbody");
    body.replaceChildren(...page.processes.map((p) => {
      const tr = el("tr", { class: "row", "data-pid": p.pid },
        el("td", {}, p.pid), el("td", {}, p.registered_name),
        el("td", { class: "call", title: p.initial_call }, p.initial_call),
        el("td", { class: "num" }, fmt(p.message_queue_len)), el("td", { class: "num" }, bytes(p.memory)),
        el("td", { class: "num" }, fmt(p.reductions)));
      tr.addEventListener("click", () => { location.hash = "#/process/" + encodeURIComponent(p.pid); });
      return tr;
    }));
    for (const th of document.querySelectorAll("#processes th")) {
      const on = th.dataset.key === table.sort;
      th.classList.toggle("sorted", on); th.classList.toggle("asc", on && table.order === "asc");
    }
    const to = Math.min(page.offset + page.processes.length, page.total);
    document.getElementById("range").textContent =
      (page.total ? fmt(page.offset + 1) : "0") + "–" + fmt(to) + " of " + fmt(page.total) +
      " processes (" + (page.took_us / 1000).toFixed(1) + " ms on the server)";
    document.getElementById("prev").disabled = page.offset === 0;
    document.getElementById("next").disabled = to >= page.total;
    setStatus("sorted by " + table.sort + " (" + table.order + ")" + (table.filter ? ", filter “" + table.filter + "”" : ""));
    rendered();
  }

  // -- one process ----------------------------------------------------------------------------
  function showProcess(pid) {
    view.replaceChildren(el("h2", {}, "Process ", el("span", { id: "detail-pid" }, pid)),
      el("div", { id: "detail" }, el("p", { class: "muted" }, "Loading…")));
    loadProcess(pid);
    every(2000, () => loadProcess(pid));
  }
  async function loadProcess(pid) {
    const g = generation;
    const box = document.getElementById("detail");
    let d;
    try { d = await api("/console/api/process?pid=" + encodeURIComponent(pid)); } catch (e) {
      if (g !== generation) return;
      box.replaceChildren(el("p", { id: "detail-gone", class: "result bad" }, e.message.startsWith("404") ? "Not alive (any more)." : e.message));
      clearInterval(timer); rendered(); return;
    }
    if (g !== generation) return;
    const list = (pids) => pids.length ? pids.flatMap((p, i) => i ? [", ", pidLink(p)] : [pidLink(p)]) : ["—"];
    const rows = [
      ["status", d.status], ["registered name", d.registered_name || "—"], ["initial call", d.initial_call],
      ["waiting for", d.waiting_for || (d.complete ? "—" : "(running: lists not read)")],
      ["message queue", el("span", { id: "detail-queue" }, fmt(d.message_queue_len))],
      ["messages received / examined", fmt(d.messages_received) + " / " + fmt(d.messages_examined)],
      ["mailbox limit", d.mailbox_capacity ? fmt(d.mailbox_capacity) + " (" + fmt(d.messages_dropped) + " dropped)" : "none"],
      ["reductions", fmt(d.reductions)], ["memory", bytes(d.memory) + " (queue " + bytes(d.queue_bytes) + ")"],
      ["traps exits", d.trap_exit ? "yes" : "no"], ["parent", d.parent ? pidLink(d.parent) : "—"],
      ["supervisor path", el("span", { class: "path", id: "detail-path" }, ...(d.supervisor_path.length
        ? d.supervisor_path.flatMap((a, i) => [i ? " › " : "", pidLink(a.pid), a.registered_name ? " " + a.registered_name : "", a.kind ? " (" + a.kind + ")" : ""])
        : ["—"]))],
      ["links", el("span", {}, ...list(d.links))], ["monitors", el("span", {}, ...list(d.monitors))],
      ["monitored by", el("span", {}, ...list(d.monitored_by))],
      ["first queued messages", el("span", { id: "detail-types" }, d.queued_types.length ? d.queued_types.join(", ") : "—")],
      ["labels", el("span", { id: "detail-labels" }, Object.keys(d.labels).length
        ? Object.entries(d.labels).map(([k, v]) => k + " = " + v).join("; ") : "—")]];
    if (d.supervisor_kind)
      rows.push(["supervises", d.supervisor_kind + ": " + fmt(d.supervisor_children) + " children, " + fmt(d.supervisor_restarts) + " restarts"]);
    const actions = el("div", { class: "actions" },
      actionButton("kill", d.pid), actionButton("suspend", d.pid), actionButton("resume", d.pid),
      ...(d.supervisor_kind === "dynamic_supervisor"
        ? [actionButton("shed_on", d.pid), actionButton("shed_off", d.pid), actionButton("shed_auto", d.pid)] : []),
      el("span", { id: "action-result", class: "result" }, box.querySelector("#action-result")?.textContent || ""));
    box.replaceChildren(el("dl", { class: "detail" }, ...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
      el("h2", {}, "Actions"), actions);
    setStatus("refreshed every 2 s" + (live.actions ? "" : "; actions are off (no console_token)"));
    rendered();
  }
  function actionButton(action, pid) {
    return el("button", { id: "action-" + action, onclick: () => act(action, pid) }, action.replace("_", " "));
  }
  async function act(action, pid) {
    const out = document.getElementById("action-result");
    const r = await fetch("/console/api/action", {
      method: "POST", headers: { "X-Beamlet-Token": tokenInput.value, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ action, pid }) });
    const text = (await r.text()).trim();
    out.textContent = r.status + ": " + text;
    out.className = "result " + (r.ok ? "good" : "bad");
    document.body.dataset.lastAction = String(r.status);
  }

  // -- supervision tree -----------------------------------------------------------------------
  const restartsSeen = new Map();  // supervisor pid -> restarts at the last refresh
  const closed = new Set();        // supervisors the operator folded
  function showTree() {
    view.replaceChildren(el("div", { id: "tree", class: "tree-root" }, el("p", { class: "muted" }, "Loading…")));
    loadTree();
    every(2000, loadTree);
  }
  function treeNode(n) {
    if (!n.kind) {
      return el("div", { class: "leaf", "data-pid": n.pid }, pidLink(n.pid), " ", n.registered_name || "",
        el("span", { class: "kind" }, " " + n.initial_call + (n.message_queue_len ? ", queue " + fmt(n.message_queue_len) : "")));
    }
    const before = restartsSeen.get(n.pid);
    restartsSeen.set(n.pid, n.restarts);
    const summary = el("summary", { class: before !== undefined && n.restarts > before ? "flash" : "" },
      pidLink(n.pid), " ", n.registered_name || "", el("span", { class: "kind" }, " " + n.kind + ", " + fmt(n.children_total) + " children"),
      n.restarts ? el("span", { class: "restarts", "data-restarts": n.restarts }, ", " + fmt(n.restarts) + " restarts") : null);
    const d = el("details", { class: "sup", "data-pid": n.pid }, summary, ...n.children.map(treeNode));
    if (!closed.has(n.pid)) d.open = true;
    d.addEventListener("toggle", () => { if (d.open) closed.delete(n.pid); else closed.add(n.pid); });
    const shown = (n.children_offset || 0) + n.children.length;
    if (shown < n.children_total) {
      d.append(el("button", { class: "more", onclick: (ev) => moreChildren(ev.target, n.pid, shown) },
        "next " + fmt(Math.min(50, n.children_total - shown)) + " of " + fmt(n.children_total - shown) + " more"));
    }
    return d;
  }
  async function moreChildren(button, pid, offset) {
    clearInterval(timer);  // a paged-in tree is not refreshed under the operator's eyes
    const t = await api("/console/api/tree?max_children=50&supervisor=" + encodeURIComponent(pid) + "&offset=" + offset);
    const sup = t.supervisors[0];
    const parent = button.parentElement;
    button.remove();
    for (const c of sup.children) parent.append(treeNode(c));
    const shown = offset + sup.children.length;
    if (shown < sup.children_total)
      parent.append(el("button", { class: "more", onclick: (ev) => moreChildren(ev.target, pid, shown) },
        "next " + fmt(Math.min(50, sup.children_total - shown)) + " more"));
    setStatus("children of " + pid + " paged in: the tree stops refreshing until you open it again");
  }
  async function loadTree() {
    const g = generation;
    let t;
    try { t = await api("/console/api/tree?max_children=50"); } catch (e) { setStatus("tree: " + e.message); return; }
    if (g !== generation) return;
    const root = document.getElementById("tree");
    root.replaceChildren(...(t.supervisors.length ? t.supervisors.map(treeNode) : [el("p", { class: "muted" }, "No supervisors.")]));
    setStatus("refreshed every 2 s; restarts flash" + (t.truncated ? "; the tree was cut at the page limit" : ""));
    rendered();
  }

  // -- alarms and reports ---------------------------------------------------------------------
  function showAlarms() {
    view.replaceChildren(el("div", { id: "alarms" }, el("p", { class: "muted" }, "Loading…")));
    loadAlarms();
    every(2000, loadAlarms);
  }
  const time = (ms) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);
  async function loadAlarms() {
    const g = generation;
    let a;
    try { a = await api("/console/api/alarms"); } catch (e) { setStatus("alarms: " + e.message); return; }
    if (g !== generation) return;
    const alarmRow = (x) => el("tr", { class: x.on ? "alarm-on" : "" }, el("td", {}, time(x.time_ms)), el("td", {}, x.kind),
      el("td", {}, pidLink(x.pid)), el("td", {}, x.registered_name), el("td", {}, x.kind === "long_message_queue" ? (x.on ? "on" : "off") : ""),
      el("td", { class: "num" }, x.kind === "long_schedule" ? fmt(x.ran_us) + " µs" : fmt(x.queue_len)), el("td", {}, x.port || ""));
    const alarmTable = (id, rows) => el("table", { id }, el("thead", {}, el("tr", {}, ...["time", "alarm", "pid", "name", "state", "queue / ran", "port"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows.map(alarmRow)));
    const reportRow = (r) => el("tr", {}, el("td", {}, (r.time || "").replace("T", " ").slice(0, 19)), el("td", {}, r.level || ""),
      el("td", {}, r.report || "message"), el("td", {}, r.pid ? pidLink(r.pid) : ""), el("td", { class: "call", title: r.msg || "" }, r.msg || ""));
    document.getElementById("alarms").replaceChildren(
      el("p", { class: "muted" }, a.subscribed ? "The console receives the system monitor's alarms." :
        a.subscriber ? "The system monitor's alarms go to " + a.subscriber + ", not to the console: only reports are shown." :
        "No system monitor subscription."),
      el("h2", {}, "Long message queues now (" + a.active.length + ")"), alarmTable("active-alarms", a.active),
      el("h2", {}, "Recent alarms (" + fmt(a.alarms_seen) + " in all)"), alarmTable("alarm-list", a.alarms),
      el("h2", {}, "Recent reports (" + fmt(a.reports_seen) + " in all)"),
      el("table", { id: "report-list" }, el("thead", {}, el("tr", {}, ...["time", "level", "report", "pid", "summary"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...a.reports.map(reportRow))));
    setStatus("refreshed every 2 s");
    rendered();
  }

  // -- nodes ----------------------------------------------------------------------------------
  function showNodes(name) {
    view.replaceChildren(el("div", { id: "nodes" }, el("p", { class: "muted" }, "Loading…")),
      el("div", { id: "node" }));
    loadNodes(name);
    // The list refreshes; a node's processes are read on demand (each look walks every process
    // of that node).
    every(5000, () => loadNodes(null));
  }
  async function loadNodes(name) {
    const g = generation;
    const box = document.getElementById("nodes");
    const r = await fetch("/console/api/nodes", { cache: "no-store" });
    if (g !== generation) return;
    if (r.status === 404) {
      box.replaceChildren(el("p", { id: "no-dist", class: "muted" },
        "This runtime is not a distributed node (beamlet/dist/node.hpp: dist::start)."));
      clearInterval(timer); rendered(); return;
    }
    if (!r.ok) { setStatus("nodes: " + r.status); return; }
    const n = await r.json();
    box.replaceChildren(
      el("p", {}, "This node: ", el("b", {}, n.node)),
      el("table", { id: "node-list" }, el("thead", {}, el("tr", {}, ...["node", "kind", "outbox"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...n.nodes.map((x) => el("tr", { class: "row", "data-node": x.name,
          onclick: () => { location.hash = "#/nodes/" + encodeURIComponent(x.name); } },
          el("td", {}, x.name), el("td", {}, x.visible ? "visible" : "hidden"), el("td", { class: "num" }, bytes(x.outbox_bytes)))))));
    if (name) loadNode(name);
    else setStatus(n.nodes.length + " connected; click one for its processes with the longest queues");
    rendered();
  }
  async function loadNode(name) {
    const g = generation;
    const box = document.getElementById("node");
    box.replaceChildren(el("h2", {}, name), el("p", { class: "muted" }, "Asking the node…"));
    const r = await fetch("/console/api/node?" + new URLSearchParams({ name, n: 20 }), { cache: "no-store" });
    if (g !== generation) return;
    if (!r.ok) { box.replaceChildren(el("h2", {}, name), el("p", { class: "result bad", id: "node-error" }, (await r.text()).trim())); return; }
    const d = await r.json();
    box.replaceChildren(el("h2", {}, name + ": ", el("span", { id: "node-count" }, fmt(d.processes)), " processes ",
        el("button", { id: "node-refresh", onclick: () => loadNode(name) }, "read again")),
      el("table", { id: "node-top" },
        el("thead", {}, el("tr", {}, ...["pid", "name", "current function", "queue", "memory", "reductions"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...d.top.map((p) => el("tr", { "data-pid": p.pid }, el("td", {}, p.pid), el("td", {}, p.registered_name),
          el("td", { class: "call" }, p.current_function), el("td", { class: "num" }, fmt(p.message_queue_len)),
          el("td", { class: "num" }, bytes(p.memory)), el("td", { class: "num" }, fmt(p.reductions)))))));
    setStatus("the longest queues on " + name + ", read over distribution in " + d.took_ms + " ms (nothing loaded there)");
  }

  // -- routing --------------------------------------------------------------------------------
  function route() {
    let h = location.hash.replace(/^#\/?/, "");
    try { h = decodeURIComponent(h); } catch (e) { /* a malformed fragment: taken as written */ }
    if (h.startsWith("process/")) return { name: "process", arg: h.slice(8) };
    if (h.startsWith("nodes/")) return { name: "nodes", arg: h.slice(6) };
    if (["processes", "tree", "alarms", "nodes"].includes(h)) return { name: h };
    return { name: "overview" };
  }
  function navigate() {
    ++generation;
    clearInterval(timer);
    const r = route();
    for (const a of document.querySelectorAll("header nav a"))
      a.classList.toggle("active", a.id === "nav-" + (r.name === "process" ? "processes" : r.name));
    if (r.name === "processes") showProcesses();
    else if (r.name === "process") showProcess(r.arg);
    else if (r.name === "tree") showTree();
    else if (r.name === "alarms") showAlarms();
    else if (r.name === "nodes") showNodes(r.arg);
    else showOverview();
  }
  window.addEventListener("hashchange", navigate);
  window.addEventListener("resize", () => { if (route().name === "overview") drawOverview(); });
  navigate();
  connect();
})();
