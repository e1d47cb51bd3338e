// The replay's live page: one static HTML document with its script inline, served by the
// replay's own HTTP endpoint at "/". No build step and nothing fetched from elsewhere: it reads
// /replay/state (the timeline so far), /processes (the top mailboxes) and /tree (the
// supervision tree) twice a second and redraws.
//
// What it shows, and what the browser test reads back from the DOM: the ring now and at its
// smallest (#ring-now, #ring-min), the longest mailbox now and at its peak (#mailbox-now,
// #mailbox-peak), a table with one row per second (#timeline), the top mailboxes (#top), the
// supervision tree (#tree), four charts drawn on canvases, and a status line (#status) that
// says "done" once the run is over.
#pragma once

namespace replay {

inline constexpr const char* live_page_html = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>beamlet outage replay</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 16px; color: #222; background: #fafafa; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  .sub { color: #666; margin-bottom: 12px; }
  .cards { display: flex; gap: 12px; margin-bottom: 12px; }
  .card { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 150px; }
  .card .v { font-size: 24px; font-weight: 600; }
  .card .l { color: #666; font-size: 12px; }
  .bad { color: #c0392b; } .good { color: #27ae60; }
  .grid { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
  canvas { background: #fff; border: 1px solid #ddd; border-radius: 6px; width: 100%; height: 160px; }
  table { border-collapse: collapse; font-size: 12px; background: #fff; }
  td, th { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
  th { background: #f0f0f0; }
  td.ev { text-align: left; color: #8e44ad; }
  .ring span { display: inline-block; width: 22px; height: 22px; line-height: 22px; margin: 1px;
               text-align: center; border-radius: 11px; color: #fff; font-size: 12px; }
  .ring .member { background: #27ae60; } .ring .dropped { background: #c0392b; }
  .scroll { max-height: 300px; overflow-y: auto; }
  #tree ul { margin: 0; padding-left: 16px; } #tree li { list-style: none; }
  .q { color: #c0392b; font-weight: 600; }
</style>
</head>
<body>
<h1>beamlet outage replay</h1>
<div class="sub" id="scenario">loading...</div>
<div class="sub">Look inside the running replay: <a href="/console#/processes" id="console-link">the
console</a> (every process sorted by queue length, the supervision tree, the alarms).</div>
<div class="cards">
  <div class="card"><div class="l">ring members now</div><div class="v" id="ring-now">-</div></div>
  <div class="card"><div class="l">ring at its smallest</div><div class="v" id="ring-min">-</div></div>
  <div class="card"><div class="l">longest mailbox now</div><div class="v" id="mailbox-now">-</div></div>
  <div class="card"><div class="l">longest mailbox, peak</div><div class="v" id="mailbox-peak">-</div></div>
  <div class="card"><div class="l">unplaced participants</div><div class="v" id="unplaced">-</div></div>
</div>
<div class="ring" id="ring"></div>
<p id="status">waiting for the first second...</p>
<div class="grid">
  <div><b>longest mailbox per instance</b> (log scale)<canvas id="c-queue" width="600" height="160"></canvas></div>
  <div><b>ring members</b><canvas id="c-ring" width="600" height="160"></canvas></div>
  <div><b>RPC success</b> (% of attempts)<canvas id="c-rpc" width="600" height="160"></canvas></div>
  <div><b>connection starts per second</b><canvas id="c-conn" width="600" height="160"></canvas></div>
</div>
<div class="grid" style="margin-top:12px">
  <div><b>top mailboxes</b> (/processes)
    <table id="top"><thead><tr><th>process</th><th>queued</th><th>status</th></tr></thead><tbody></tbody></table>
    <p><b>supervision tree</b> (/tree, first children only)</p>
    <div id="tree" class="scroll"></div>
  </div>
  <div><b>timeline</b>
    <div class="scroll"><table id="timeline"><thead><tr><th>t</th><th>ring</th><th>max mailbox</th>
      <th>rpc ok</th><th>conn/s</th><th>unplaced</th><th>event</th></tr></thead><tbody></tbody></table></div>
  </div>
</div>
<script>
"use strict";
const colors = ["#e74c3c","#3498db","#2ecc71","#9b59b6","#f39c12","#1abc9c","#34495e","#e67e22",
                "#16a085","#c0392b","#2980b9","#8e44ad"];

function chart(id, series, opts) {
  const c = document.getElementById(id), g = c.getContext("2d");
  const w = c.width, h = c.height, pad = 30;
  g.clearRect(0, 0, w, h);
  let maxX = 1, maxY = opts.max || 1;
  for (const s of series) for (const [x, y] of s.points) { maxX = Math.max(maxX, x); if (!opts.max) maxY = Math.max(maxY, y); }
  const fy = opts.log ? (y => Math.log10(Math.max(1, y)) / Math.log10(Math.max(10, maxY)))
                      : (y => y / maxY);
  g.strokeStyle = "#ddd"; g.fillStyle = "#666"; g.font = "10px sans-serif";
  g.beginPath(); g.moveTo(pad, 4); g.lineTo(pad, h - pad + 4); g.lineTo(w - 4, h - pad + 4); g.stroke();
  g.fillText(opts.log ? Math.round(maxY).toLocaleString() : String(Math.round(maxY)), 2, 12);
  g.fillText("0", 2, h - pad + 4); g.fillText(maxX + " s", w - 36, h - 4);
  if (opts.mark) { const x = pad + (w - pad - 4) * opts.mark / maxX; g.strokeStyle = "#999";
    g.setLineDash([4, 3]); g.beginPath(); g.moveTo(x, 4); g.lineTo(x, h - pad + 4); g.stroke(); g.setLineDash([]); }
  series.forEach((s, i) => {
    g.strokeStyle = s.color || colors[i % colors.length]; g.lineWidth = 2; g.beginPath();
    s.points.forEach(([x, y], j) => {
      const px = pad + (w - pad - 4) * x / maxX, py = (h - pad) - (h - pad - 8) * fy(y) + 4;
      if (j === 0) g.moveTo(px, py); else g.lineTo(px, py);
    });
    g.stroke();
  });
}

function text(id, v, cls) { const e = document.getElementById(id); e.textContent = v; if (cls !== undefined) e.className = "v " + cls; }

function renderState(s) {
  document.getElementById("scenario").textContent =
    "--fix " + s.fix + " --recovery " + s.recovery + " \u00b7 " + s.instances +
    " voice-syncer instances \u00b7 fault at " + Math.round(s.fault_at) + " s \u00b7 run of " + Math.round(s.seconds) + " s";
  const rows = s.rows;
  if (rows.length === 0) return;
  const last = rows[rows.length - 1];
  const maxq = r => r.queues.reduce((a, b) => Math.max(a, b), 0);
  let peak = 0, ringMin = last.provisioned;
  for (const r of rows) { peak = Math.max(peak, maxq(r)); if (r.t >= 2) ringMin = Math.min(ringMin, r.ring); }
  text("ring-now", last.ring + " of " + last.provisioned, last.ring < last.provisioned ? "bad" : "good");
  text("ring-min", ringMin + " of " + last.provisioned, ringMin < last.provisioned ? "bad" : "good");
  text("mailbox-now", maxq(last).toLocaleString("en-US"), maxq(last) >= 1000 ? "bad" : "good");
  text("mailbox-peak", peak.toLocaleString("en-US"), peak >= 1000 ? "bad" : "good");
  text("unplaced", last.unplaced.toLocaleString("en-US"), last.unplaced > 0 ? "bad" : "good");
  const ring = document.getElementById("ring"); ring.innerHTML = "";
  for (let i = 0; i < last.provisioned; i++) {
    const b = document.createElement("span"); const inRing = (last.members >> i) & 1;
    b.className = inRing ? "member" : "dropped"; b.textContent = i;
    b.title = "instance " + i + (inRing ? " in the ring" : " out of the ring"); ring.appendChild(b);
  }
  document.getElementById("status").textContent =
    (s.done ? "done" : "running") + ": " + last.t + " s of " + Math.round(s.seconds) + " s";
  const tbody = document.querySelector("#timeline tbody"); tbody.innerHTML = "";
  for (const r of rows.slice().reverse()) {
    const tr = document.createElement("tr");
    const ok = r.rpc_ok + r.rpc_failed > 0 ? (100 * r.rpc_ok / (r.rpc_ok + r.rpc_failed)).toFixed(1) + "%" : "-";
    for (const [v, cls] of [[r.t, "t"], [r.ring + "/" + r.provisioned, "ring"], [maxq(r), "mailbox"],
                            [ok, "ok"], [r.conn, "conn"], [r.unplaced, "unplaced"], [r.event, "ev"]]) {
      const td = document.createElement("td"); td.textContent = v; td.className = cls; tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
  const n = Math.max(...rows.map(r => r.queues.length));
  const qs = [];
  for (let i = 0; i < n; i++) qs.push({points: rows.filter(r => i < r.queues.length).map(r => [r.t, r.queues[i]])});
  chart("c-queue", qs, {log: true, mark: s.fault_at});
  chart("c-ring", [{points: rows.map(r => [r.t, r.ring]), color: "#27ae60"}], {max: n, mark: s.fault_at});
  chart("c-rpc", [{points: rows.filter(r => r.rpc_ok + r.rpc_failed > 0)
                     .map(r => [r.t, 100 * r.rpc_ok / (r.rpc_ok + r.rpc_failed)]), color: "#3498db"}],
        {max: 100, mark: s.fault_at});
  chart("c-conn", [{points: rows.map(r => [r.t, r.conn]), color: "#e67e22"}], {mark: s.fault_at});
}

function renderTop(p) {
  const tbody = document.querySelector("#top tbody"); tbody.innerHTML = "";
  for (const e of p.processes) {
    const tr = document.createElement("tr");
    for (const v of [e.registered_name || e.pid, e.message_queue_len.toLocaleString("en-US"), e.status]) {
      const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
    }
    tbody.appendChild(tr);
  }
}

function treeNode(n) {
  const li = document.createElement("li");
  const name = n.registered_name || n.pid;
  li.innerHTML = "";
  li.appendChild(document.createTextNode((n.kind ? "\u25be " : "\u2022 ") + name + " "));
  if (n.message_queue_len > 0) { const q = document.createElement("span"); q.className = "q";
    q.textContent = "[" + n.message_queue_len.toLocaleString("en-US") + " queued]"; li.appendChild(q); }
  if (n.children_total !== undefined) {
    li.appendChild(document.createTextNode(" (" + n.children_total + " children)"));
    const named = (n.children || []).filter(c => c.kind || c.registered_name);
    if (named.length) { const ul = document.createElement("ul"); for (const c of named) ul.appendChild(treeNode(c)); li.appendChild(ul); }
  }
  return li;
}

function renderTree(t) {
  const root = document.getElementById("tree"); root.innerHTML = "";
  const ul = document.createElement("ul");
  for (const s of t.supervisors) if (s.registered_name === "replay") ul.appendChild(treeNode(s));
  root.appendChild(ul);
}

let ticks = 0;
async function refresh() {
  try {
    const s = await (await fetch("/replay/state")).json();
    renderState(s);
    renderTop(await (await fetch("/processes?n=8&by=message_queue_len")).json());
    if (ticks++ % 4 === 0) renderTree(await (await fetch("/tree?max_children=40")).json());
    if (s.done) return;
  } catch (e) {
    document.getElementById("status").textContent = "the replay is not answering (" + e + ")";
  }
  setTimeout(refresh, 500);
}
refresh();
</script>
</body>
</html>
)html";

}  // namespace replay
