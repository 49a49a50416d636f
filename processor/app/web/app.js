// app.js — dpstream's live page: polls /api/streams and each stream's
// /api/streams/{id}/history and draws, per stream, the budget burning down
// over steps and the released figures over steps (with the published error
// band where the release states one).  Plain DOM and SVG, no libraries.
"use strict";

const POLL_MS = 1500;
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...kids) {
  const e = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k) e.appendChild(k);
  return e;
}

function fmt(x) {
  if (x === undefined || x === null || !isFinite(x)) return "–";
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(3);
  return Number(x.toPrecision(6)).toString();
}

// A line chart of points [{x, y, lo, hi}] (lo/hi: an optional band), with
// an optional horizontal reference line (the budget).
function chart(title, points, opts) {
  const W = 320, H = 120, L = 44, R = 8, T = 8, B = 18;
  const svg = el("svg:svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  if (!points.length) return el("div", { class: "chart" }, el("h3", { text: title }), svg);
  const xs = points.map(p => p.x);
  const ys = points.flatMap(p => [p.y, p.lo ?? p.y, p.hi ?? p.y]).concat(opts.ref !== undefined ? [opts.ref] : []);
  let x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(0, ...ys), y1 = Math.max(...ys);
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) y1 = y0 + 1;
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  if (points.some(p => p.lo !== undefined)) {
    const up = points.map(p => `${sx(p.x)},${sy(p.hi)}`), dn = points.slice().reverse().map(p => `${sx(p.x)},${sy(p.lo)}`);
    svg.appendChild(el("svg:polygon", { points: up.concat(dn).join(" "), fill: "#c9d6f2", stroke: "none" }));
  }
  if (opts.ref !== undefined)
    svg.appendChild(el("svg:line", { x1: L, x2: W - R, y1: sy(opts.ref), y2: sy(opts.ref), stroke: "#b33", "stroke-dasharray": "4 3" }));
  svg.appendChild(el("svg:polyline", { points: points.map(p => `${sx(p.x)},${sy(p.y)}`).join(" "), fill: "none", stroke: "#2f4f9e", "stroke-width": 1.6 }));
  svg.appendChild(el("svg:line", { x1: L, x2: L, y1: T, y2: H - B, stroke: "#aab" }));
  svg.appendChild(el("svg:line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#aab" }));
  svg.appendChild(el("svg:text", { x: 2, y: sy(y1) + 4, text: fmt(y1) }));
  svg.appendChild(el("svg:text", { x: 2, y: sy(y0), text: fmt(y0) }));
  svg.appendChild(el("svg:text", { x: L, y: H - 4, text: `step ${x0}` }));
  svg.appendChild(el("svg:text", { x: W - R - 50, y: H - 4, text: `step ${x1}` }));
  return el("div", { class: "chart" }, el("h3", { text: title }), svg);
}

// The figures worth a chart: those that change over the history (constants
// such as n_pad or the box are configuration, listed in the header instead).
function varyingFigures(history) {
  const keys = new Map();
  for (const h of history)
    for (const [k, v] of Object.entries(h.figures || {})) {
      if (!keys.has(k)) keys.set(k, new Set());
      keys.get(k).add(v);
    }
  return [...keys.entries()].filter(([, vals]) => vals.size > 1).map(([k]) => k).slice(0, 8);
}

// A published error band for figure k at entry h: `max_abs_error` (at
// `beta`) bounds every released count; a share is a count over the
// population, so its band is the bound over the population.
function band(h, k) {
  const e = h.accuracy && h.accuracy.max_abs_error, pop = h.figures && h.figures.population;
  if (e === undefined) return {};
  const v = h.figures[k];
  if (k.startsWith("share.") && pop > 0) return { lo: v - e / pop, hi: v + e / pop };
  if (k.startsWith("count.")) return { lo: v - e, hi: v + e };
  return {};
}

function renderStream(s, hist) {
  const card = el("section", { class: "card", "data-stream": s.id });
  const eps = s.model === "zcdp" ? ` (ε = ${fmt(s.epsilon)} at δ = ${fmt(s.delta)})` : "";
  const unit = s.model === "zcdp" ? "ρ" : "ε";
  card.appendChild(el("div", { class: "row" },
    el("h2", { text: s.id }),
    el("span", { class: "sub", text: s.synthesizer }),
    el("span", { class: `badge ${s.status}`, text: s.status })));
  const spent = el("span", { class: "budget-spent", "data-value": String(s.spent_total), text: fmt(s.spent_total) });
  card.appendChild(el("div", { class: "row" },
    el("span", {}, el("span", { text: `budget ${unit}: spent ` }), spent,
      el("span", { text: ` of ${fmt(s.budget_total)}${eps}` })),
    el("span", { class: "last-step", "data-step": String(s.last_step), text: `last step ${s.last_step}` }),
    el("span", { text: `${s.last_records} records in the last release` }),
    el("span", { class: "sub", text: s.mechanism || "" })));
  const h = (hist && hist.history) || [];
  const charts = el("div", { class: "charts" });
  charts.appendChild(chart(`budget spent (${unit}) — dashed: the total`, h.map(e => ({ x: e.step, y: e.spent })), { ref: s.budget_total }));
  charts.appendChild(chart("records released", h.map(e => ({ x: e.step, y: e.records })), {}));
  for (const k of varyingFigures(h))
    charts.appendChild(chart(k, h.filter(e => e.figures && e.figures[k] !== undefined)
      .map(e => Object.assign({ x: e.step, y: e.figures[k] }, band(e, k))), {}));
  card.appendChild(charts);
  return card;
}

function renderInput(input) {
  const body = document.getElementById("input-body");
  body.replaceChildren();
  const dl = el("table", {}, el("tr", {}, el("th", { text: "dead letters by reason" }), el("th", { text: "count" })));
  for (const [r, n] of Object.entries(input.dead_letters || {})) dl.appendChild(el("tr", {}, el("td", { text: r }), el("td", { text: String(n) })));
  const lag = el("table", {}, el("tr", {}, el("th", { text: "partition" }), el("th", { text: "lag (messages)" })));
  for (const [p, n] of Object.entries(input.lag || {})) lag.appendChild(el("tr", {}, el("td", { text: p }), el("td", { text: String(n) })));
  body.appendChild(el("div", { class: "row" }, dl, lag));
}

// Per-shard step progress under the roles (docs/kafka.md §10): an ingest
// instance's shards and their open steps; a release instance's next step
// per stream and the shards it still waits for.  Step boundaries: public.
function renderSharded(sh) {
  const body = document.getElementById("sharded-body");
  body.replaceChildren();
  const head = (...t) => el("tr", {}, ...t.map(x => el("th", { text: x })));
  const row = (...t) => el("tr", {}, ...t.map(x => el("td", { text: String(x) })));
  const tables = [];
  if ((sh.shards || []).length) {
    const t = el("table", { class: "shards" }, head("stream", "shard", "open step", "last closed step"));
    for (const s of sh.shards) t.appendChild(row(s.stream, s.shard, s.open_step, s.closed_step));
    tables.push(t);
  }
  if ((sh.releases || []).length) {
    const t = el("table", { class: "releases" }, head("stream", "next step", "shards arrived", "waiting for"));
    for (const r of sh.releases)
      t.appendChild(row(r.stream, r.next_step, `${r.arrived.length} of ${r.shards}`, r.waiting.length ? r.waiting.join(", ") : "none"));
    tables.push(t);
  }
  body.appendChild(el("div", { class: "row" }, ...tables));
}

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return r.json();
}

async function refresh() {
  try {
    const data = await getJSON("/api/streams");
    const cards = [];
    for (const s of data.streams) {
      let hist = null;
      try { hist = await getJSON(`/api/streams/${encodeURIComponent(s.id)}/history`); } catch (e) { hist = null; }
      cards.push(renderStream(s, hist));
    }
    document.getElementById("streams").replaceChildren(...cards);
    document.getElementById("input").hidden = !data.input_metrics;
    document.getElementById("input-note").hidden = !data.input_metrics;
    if (data.input_metrics && data.input) renderInput(data.input);
    document.getElementById("sharded").hidden = !data.sharded;
    if (data.sharded) renderSharded(data.sharded);
    const u = document.getElementById("updated");
    u.textContent = `${data.streams.length} stream(s); updated ${new Date().toLocaleTimeString()}`;
    u.setAttribute("data-streams", String(data.streams.length));
  } catch (e) {
    document.getElementById("updated").textContent = `cannot reach the processor (${e.message}); retrying`;
  }
  setTimeout(refresh, POLL_MS);
}

refresh();
