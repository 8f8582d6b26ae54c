// dashboard.js is the live dashboard at /llmtap/ui/: it polls the admin JSON routes of the
// Caddy instance that served it (same origin, nothing else) and redraws the charts with LT.
"use strict";

// Source is the one place that knows where the data comes from. poll() returns the points to
// draw, oldest first: {t (ms), groups: {key: {ttft_p50, ttft_p99, itl_p50, itl_p99, req_rate,
// tok_rate, err_rate}}, in_flight, gpus: [{name, util, power}] | null}. It reads the timeline
// (GET /llmtap/timeline: fixed windows, revised until final) when the server runs one, and
// otherwise derives points from GET /llmtap/summary (percentiles over the rolling window,
// rates from differences of the cumulative counts between two polls).
const Source = {
  kind: "",           // "timeline" or "summary", once known
  note: "",           // what the figures are, for the status line
  windows: new Map(), // timeline: seq -> window
  windowMs: 0,        // timeline: the window length of those windows
  points: [],         // summary: the points so far
  prev: null,         // summary: {t, counts} of the previous poll

  async poll() {
    if (this.kind !== "summary" && ROUTES.has("/llmtap/timeline")) {
      const res = await fetch(`/llmtap/timeline?since=${this.since()}`, {cache: "no-store"});
      if (res.ok) { this.kind = "timeline"; return this.fromTimeline(await res.json()); }
      if (res.status !== 404 || this.kind === "timeline") throw new Error(`GET /llmtap/timeline: ${res.status} ${await res.text()}`);
      this.kind = "summary"; // no timeline runs on this server
    }
    this.kind = "summary";
    return this.fromSummary();
  },

  // since asks for the windows that may still change (not final) and the new ones.
  since() {
    let open = Infinity, newest = -Infinity;
    for (const w of this.windows.values()) {
      if (!w.final) open = Math.min(open, w.start_ms);
      newest = Math.max(newest, w.start_ms);
    }
    if (open < Infinity) return open;
    if (newest > -Infinity) return newest + 1;
    return Date.now() - MAX_POINTS * 1000;
  },

  fromTimeline(doc) {
    // A timeline restarted with another window length numbers its windows anew.
    if (this.windowMs !== doc.window_ms) { this.windows.clear(); this.windowMs = doc.window_ms; }
    for (const w of doc.windows) this.windows.set(w.seq, w);
    const seqs = [...this.windows.keys()].sort((a, b) => a - b);
    for (const s of seqs.slice(0, Math.max(0, seqs.length - MAX_POINTS))) this.windows.delete(s);
    // The timeline sends only windows that saw something (a window's seq is its start over its
    // length): a missing seq between two is a window without traffic, drawn with no values so
    // that the lines break there instead of joining across the idle stretch.
    const kept = seqs.slice(-MAX_POINTS);
    const wins = [];
    kept.forEach((s, i) => {
      for (let g = i > 0 ? kept[i - 1] + 1 : s; g < s && wins.length < MAX_POINTS; g++) {
        wins.push({seq: g, start_ms: g * doc.window_ms, duration_ms: doc.window_ms, series: [], in_flight: null, gpus: []});
      }
      wins.push(this.windows.get(s));
    });
    const models = new Set(wins.flatMap((w) => w.series.map((s) => s.model)));
    this.note = `${doc.window_ms} ms windows from /llmtap/timeline` + (doc.dropped ? ` · ${doc.dropped} contributions dropped` : "");
    return wins.map((w) => {
      const groups = {};
      let inFlight = 0;
      for (const s of w.series) {
        const k = models.size > 1 ? `${s.class} · ${s.model}` : s.class;
        groups[k] = {
          ttft_p50: s.ttft_ms ? s.ttft_ms.p50 : null, ttft_p99: s.ttft_ms ? s.ttft_ms.p99 : null,
          itl_p50: s.itl_ms ? s.itl_ms.p50 : null, itl_p99: s.itl_ms ? s.itl_ms.p99 : null,
          req_rate: s.request_rate, tok_rate: s.output_tokens_per_second, err_rate: s.errors / (w.duration_ms / 1000),
        };
        inFlight += s.in_flight;
      }
      const gpus = (w.gpus || []).map((g) => ({name: g.name ? `${g.index}: ${g.name}` : `gpu ${g.index}`, util: g.util_percent, power: g.power_w}));
      return {t: w.start_ms + w.duration_ms, groups, in_flight: w.in_flight ?? inFlight, gpus: gpus.length ? gpus : null};
    });
  },

  async fromSummary() {
    const res = await fetch("/llmtap/summary", {cache: "no-store"});
    if (!res.ok) throw new Error(`GET /llmtap/summary: ${res.status} ${await res.text()}`);
    const doc = await res.json();
    const t = Date.parse(doc.summary.time) || Date.now();
    this.note = `percentiles over the rolling ${doc.summary.window} window of /llmtap/summary (no timeline runs)` +
      (doc.records_dropped ? ` · ${doc.records_dropped} records dropped` : "");
    const models = new Set(doc.summary.groups.map((g) => g.model));
    const keyOf = (g) => models.size > 1 ? `${g.class} · ${g.model}` : g.class;
    const groups = {}, counts = {};
    for (const g of doc.summary.groups) {
      const k = keyOf(g);
      const c = counts[k] || (counts[k] = {ok: 0, err: 0, tok: 0});
      if (g.window === "cumulative") {
        c.ok += val(g.request_count);
        c.err += val(g.error_request_count);
        c.tok += val(g.total_osl);
        continue;
      }
      // The rolling window: percentiles of the successful requests (the 2xx group).
      if (g.status_class !== "2xx") continue;
      const p = groups[k] || (groups[k] = {});
      if (g.time_to_first_token) { p.ttft_p50 = g.time_to_first_token.p50; p.ttft_p99 = g.time_to_first_token.p99; }
      if (g.inter_token_latency) { p.itl_p50 = g.inter_token_latency.p50; p.itl_p99 = g.inter_token_latency.p99; }
    }
    if (this.prev) {
      const dt = (t - this.prev.t) / 1000;
      for (const k in counts) {
        const a = counts[k], b = this.prev.counts[k] || {ok: 0, err: 0, tok: 0};
        const p = groups[k] || (groups[k] = {});
        if (dt > 0) {
          p.req_rate = (a.ok + a.err - b.ok - b.err) / dt;
          p.tok_rate = (a.tok - b.tok) / dt;
          p.err_rate = (a.err - b.err) / dt;
        }
      }
    }
    this.prev = {t, counts};
    this.points.push({t, groups, in_flight: doc.in_flight, gpus: null});
    if (this.points.length > MAX_POINTS) this.points.shift();
    return this.points;
  },

  // slowest returns the k slowest of the n most recent request records, slowest first: the
  // server picks them, so the page never downloads n records with their gap lists.
  async slowest(n, k) {
    const res = await fetch(`/llmtap/requests?limit=${n}&slowest=${k}`, {cache: "no-store"});
    if (!res.ok) throw new Error(`GET /llmtap/requests: ${res.status}`);
    const text = await res.text();
    return text.split("\n").filter((l) => l).map((l) => JSON.parse(l));
  },
};

// ROUTES are the admin routes this server has (the page is served with their list), so the
// page asks only for routes that exist.
const ROUTES = new Set((document.body.dataset.routes || "").split(" ").filter((r) => r));

function val(s) { return s ? s.avg : 0; }

// Shadow drives the shadow-load controls through the shadow admin routes (GET /llmtap/shadow,
// POST /llmtap/shadow/<name>/start|stop|rate). Where the server has none the controls say so.
const Shadow = {
  base: "/llmtap/shadow",

  available() { return ROUTES.has(this.base); },

  async status() {
    const res = await fetch(this.base, {cache: "no-store"});
    if (!res.ok) throw new Error(`GET ${this.base}: ${res.status} ${await res.text()}`);
    return res.json();
  },

  async send(name, action, body) {
    const res = await fetch(`${this.base}/${encodeURIComponent(name)}/${action}`, {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body || {}),
    });
    if (!res.ok) throw new Error(`POST ${this.base}/${name}/${action}: ${res.status} ${await res.text()}`);
    return res.json();
  },
};

// MAX_POINTS is how many points (windows, or polls) the charts keep.
const MAX_POINTS = 300;
let shown = [];

const CHARTS = [
  {id: "ttft", title: "TTFT (ms), p50 solid / p99 dashed", y: "ms", lines: [["ttft_p50", ""], ["ttft_p99", " p99"]]},
  {id: "itl", title: "ITL (ms), p50 solid / p99 dashed", y: "ms", lines: [["itl_p50", ""], ["itl_p99", " p99"]]},
  {id: "reqrate", title: "Requests/s", y: "req/s", lines: [["req_rate", ""]]},
  {id: "tokrate", title: "Output tokens/s", y: "tok/s", lines: [["tok_rate", ""]]},
  {id: "errors", title: "Errors/s", y: "err/s", lines: [["err_rate", ""]]},
];

function specFor(c) {
  const keys = [...new Set(shown.flatMap((h) => Object.keys(h.groups)))].sort();
  const series = [];
  keys.forEach((k, i) => {
    for (const [field, suffix] of c.lines) {
      series.push({
        name: k + suffix, color: LT.colorOf(k, i), dash: suffix !== "",
        points: shown.map((h) => [h.t, h.groups[k] && h.groups[k][field] != null ? h.groups[k][field] : null]),
      });
    }
  });
  return {id: c.id, title: c.title, kind: "line", x: {time: true}, y: {label: c.y}, series};
}

function draw() {
  for (const c of CHARTS) LT.render(document.getElementById("chart-" + c.id), specFor(c));
  LT.render(document.getElementById("chart-inflight"), {
    title: "In-flight streams", kind: "line", x: {time: true}, y: {label: "streams"},
    series: [{name: "in flight", points: shown.map((h) => [h.t, h.in_flight])}],
  });
  const gpus = shown.length ? shown[shown.length - 1].gpus : null;
  document.getElementById("gpu").hidden = !gpus;
  if (gpus) {
    const names = gpus.map((g) => g.name);
    const per = (field) => names.map((n) => ({name: n, points: shown.map((h) => {
      const g = (h.gpus || []).find((x) => x.name === n);
      return [h.t, g ? g[field] : null];
    })}));
    LT.render(document.getElementById("chart-gpuutil"), {title: "GPU utilization (%)", kind: "line", x: {time: true}, y: {label: "%"}, series: per("util")});
    LT.render(document.getElementById("chart-gpupower"), {title: "GPU power (W)", kind: "line", x: {time: true}, y: {label: "W"}, series: per("power")});
  }
}

// tokenTimeline draws one request's content events as ticks on a bar from t0 to its end.
function tokenTimeline(r) {
  const W = 260, Hh = 18;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", W); svg.setAttribute("height", Hh); svg.setAttribute("class", "timeline");
  const end = r.duration_ms || r.request_latency_ms || 1;
  const x = (ms) => 2 + (W - 4) * Math.min(1, ms / end);
  const bar = document.createElementNS(svg.namespaceURI, "rect");
  Object.entries({x: 2, y: 8, width: W - 4, height: 2, fill: "#d1d5db"}).forEach(([k, v]) => bar.setAttribute(k, v));
  svg.appendChild(bar);
  let d = "";
  if (r.ttft_ms != null) {
    let t = r.ttft_ms;
    d += `M${x(t).toFixed(1)},3V15`;
    for (const g of r.inter_chunk_ms || []) { t += g; d += `M${x(t).toFixed(1)},3V15`; }
  }
  const p = document.createElementNS(svg.namespaceURI, "path");
  p.setAttribute("d", d); p.setAttribute("stroke", "#2563eb"); p.setAttribute("stroke-width", "1");
  svg.appendChild(p);
  const title = document.createElementNS(svg.namespaceURI, "title");
  title.textContent = `${(r.inter_chunk_ms || []).length + (r.ttft_ms != null ? 1 : 0)} content events over ${end.toFixed(1)} ms`;
  svg.appendChild(title);
  return svg;
}

const ms = (v) => v == null ? "–" : v.toFixed(1);

// SPLIT_COLORS are the colors of a request's parts, the report's (report/split.go splitColors).
const SPLIT_COLORS = {proxy: "#6b7280", queue: "#f59e0b", load: "#a855f7", prefill: "#2563eb", inference: "#0891b2",
  network: "#d1d5db", upstream: "#93c5fd", decode: "#16a34a", generation: "#86efac"};

// drawSplitLegend writes the time-split bars' legend: every part's color and name, in the
// report's order (report/split.go splitOrder).
function drawSplitLegend() {
  const box = document.getElementById("split-legend");
  if (!box || box.childElementCount) return;
  for (const name of ["proxy", "queue", "load", "prefill", "inference", "network", "decode", "upstream", "generation"]) {
    const span = document.createElement("span");
    span.className = "swatch";
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("width", 10); svg.setAttribute("height", 10);
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    rect.setAttribute("width", 10); rect.setAttribute("height", 10); rect.setAttribute("fill", SPLIT_COLORS[name]);
    svg.appendChild(rect); span.appendChild(svg); span.append(" " + name);
    box.append(span, " ");
  }
}

// splitSegments splits a record's latency into the parts of its stacked bar, as the report does
// (record.Segments in telemetry/record/segments.go): the proxy's own part, the server's queue,
// load, prefill (or inference) as it reported them, what is left ("network": the network and
// the server's unreported work), then its decode; without server figures, "upstream" up to the
// first token and "generation" after it.
function splitSegments(r) {
  const s = r.time_split;
  if (!s) return [];
  const total = r.request_latency_ms != null ? r.request_latency_ms : r.duration_ms;
  const out = [];
  let used = 0;
  const add = (name, v) => { v = Math.max(v, 0); out.push({name, ms: v}); used += v; };
  const val = (v) => v == null ? 0 : v;
  add("proxy", val(s.proxy_ms) + val(s.connect_ms) + val(s.send_ms));
  if (s.queue_ms == null && s.prefill_ms == null && s.inference_ms == null) {
    if (r.ttft_ms != null) { add("upstream", r.ttft_ms - used); add("generation", total - used); }
    else add("upstream", total - used);
    return out;
  }
  for (const k of ["queue", "load", "prefill", "inference"]) if (s[k + "_ms"] != null) add(k, s[k + "_ms"]);
  add("network", total - used - val(s.decode_ms));
  if (s.decode_ms != null) add("decode", s.decode_ms);
  return out;
}

// splitBar draws a record's time split as a stacked bar, each part as wide as its share; a
// server TTFT the proxy cannot reconcile with its own (ttft_disagree) is marked ≠.
function splitBar(r) {
  const segs = splitSegments(r);
  if (!segs.length) return document.createTextNode("–");
  const W = 200, Hh = 14;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("width", W + 14); svg.setAttribute("height", Hh); svg.setAttribute("class", "split");
  const sum = segs.reduce((a, s) => a + s.ms, 0) || 1;
  let x = 0;
  for (const s of segs) {
    const w = W * s.ms / sum;
    const rect = document.createElementNS(svg.namespaceURI, "rect");
    Object.entries({class: "seg-" + s.name, x: x.toFixed(2), y: 1, width: w.toFixed(2), height: Hh - 2, fill: SPLIT_COLORS[s.name]})
      .forEach(([k, v]) => rect.setAttribute(k, v));
    const t = document.createElementNS(svg.namespaceURI, "title");
    t.textContent = `${s.name} ${s.ms.toFixed(1)} ms`;
    rect.appendChild(t);
    svg.appendChild(rect);
    x += w;
  }
  if (r.time_split.ttft_disagree) {
    const t = document.createElementNS(svg.namespaceURI, "text");
    Object.entries({x: W + 3, y: Hh - 3, class: "disagree"}).forEach(([k, v]) => t.setAttribute(k, v));
    t.textContent = "≠";
    svg.appendChild(t);
  }
  return svg;
}

// RECENT is how many of the most recent requests the slowest-requests table picks from.
const RECENT = 1000;

function drawSlowest(rows) {
  const tbody = document.querySelector("#slowest tbody");
  tbody.textContent = "";
  for (const r of rows) {
    const tr = tbody.insertRow();
    const cells = [new Date(r.start).toLocaleTimeString(), r.class, r.model, r.error ? `${r.status} ${r.error}` : r.status,
      ms(r.ttft_ms), ms(r.itl_ms), ms(r.request_latency_ms), r.output_tokens, r.request_id];
    for (const c of cells) tr.insertCell().textContent = c;
    tr.insertCell().appendChild(tokenTimeline(r));
    tr.insertCell().appendChild(splitBar(r));
  }
  drawSplitLegend();
  document.getElementById("slowest-note").textContent = `the ${rows.length} slowest of the last ${RECENT} requests (by request latency, else duration)`;
}

// USAGE_ROWS is how many usage rows the tenant table shows, most requests first.
const USAGE_ROWS = 50;

// drawUsage fills the tenant table from /llmtap/summary's usage rows (cumulative counters
// per tenant, model and class; tenants past the first 64 are summed under _other).
function drawUsage(rows) {
  rows = [...rows].sort((a, b) => b.requests - a.requests);
  const tbody = document.querySelector("#usage tbody");
  tbody.textContent = "";
  for (const u of rows.slice(0, USAGE_ROWS)) {
    const tr = tbody.insertRow();
    const cells = [u.tenant || "(none)", u.model, u.class, u.requests, u.errors, u.input_tokens, u.output_tokens,
      u.cached_input_tokens, u.cache_write_input_tokens, u.reasoning_output_tokens,
      // Without a GPU sample over its requests a row has no GPU time, energy or cost: unknown,
      // not free.
      ...(u.gpu_seconds > 0 ? [LT.fmt(u.gpu_seconds), LT.fmt(u.gpu_energy_j), u.cost ? LT.fmt(u.cost) : "–"] : ["–", "–", "no GPU samples"]),
      u.list_cost ? LT.fmt(u.list_cost) : "–"];
    for (const c of cells) tr.insertCell().textContent = c;
  }
  document.getElementById("usage-note").textContent = rows.length > USAGE_ROWS ?
    `the ${USAGE_ROWS} busiest of ${rows.length} rows, since the server started` : "since the server started";
}

async function tickUsage() {
  if (!ROUTES.has("/llmtap/summary")) return;
  try {
    const res = await fetch("/llmtap/summary", {cache: "no-store"});
    if (!res.ok) throw new Error(`GET /llmtap/summary: ${res.status}`);
    drawUsage((await res.json()).summary.usage || []);
  } catch (e) { setStatus(String(e), true); }
}

async function refreshShadow() {
  const note = document.getElementById("shadow-state");
  const tbody = document.querySelector("#shadow-loads tbody");
  if (!Shadow.available()) {
    note.textContent = "Shadow load control is not available on this server: it serves no /llmtap/shadow routes.";
    note.dataset.state = "unavailable";
    return;
  }
  let doc;
  try { doc = await Shadow.status(); } catch (e) { note.textContent = String(e); return; }
  const loads = doc.shadows || [];
  note.dataset.state = loads.length ? "loads" : "none";
  note.textContent = loads.length ? (doc.guard && doc.guard.tripped ? `guard rails tripped: ${doc.guard.reason || ""}; loads paused` : "") :
    "No shadow load is configured: add one with shadow <name> { … } in the llmtap global option.";
  document.getElementById("shadow-loads").hidden = !loads.length;
  const rows = new Map([...tbody.rows].map((r) => [r.dataset.name, r]));
  for (const st of loads) {
    let tr = rows.get(st.name);
    if (!tr) {
      tr = tbody.insertRow();
      tr.dataset.name = st.name;
      for (let i = 0; i < 9; i++) tr.insertCell();
      const ctl = tr.insertCell();
      const rate = document.createElement("input");
      Object.assign(rate, {type: "number", min: "0", step: "0.1", size: 5, className: "rate", title: "requests per second"});
      rate.value = st.rate || st.config_rate;
      // A control's error stays beside the controls until the next click (the status line is
      // rewritten every second).
      const err = document.createElement("span");
      err.className = "ctl-error";
      const mk = (label, cls, fn) => {
        const b = document.createElement("button");
        b.textContent = label; b.className = cls;
        b.addEventListener("click", async () => {
          err.textContent = "";
          try { await fn(); } catch (e) { err.textContent = e.message || String(e); }
          refreshShadow();
        });
        ctl.appendChild(b);
      };
      mk("Start", "start", () => Shadow.send(st.name, "start"));
      mk("Stop", "stop", () => Shadow.send(st.name, "stop"));
      ctl.appendChild(rate);
      mk("Set rate", "set-rate", () => {
        const v = parseFloat(rate.value), max = parseFloat(tr.dataset.maxRate);
        if (!(v >= 0)) throw new Error("the rate is a number of requests per second, 0 or more");
        // max_rate defaults to the configured rate: an admin call cannot raise a load past what
        // its config allows unless the config says max_rate.
        if (max > 0 && v > max) throw new Error(`${v} req/s is above this load's max_rate ${max} (set max_rate in its config to raise it)`);
        return Shadow.send(st.name, "rate", {rate: v});
      });
      ctl.appendChild(err);
    }
    tr.dataset.maxRate = st.max_rate || "";
    const input = tr.querySelector("input.rate");
    if (st.max_rate) { input.max = st.max_rate; input.title = `requests per second, up to max_rate ${st.max_rate}`; }
    rows.delete(st.name);
    tr.dataset.state = st.state;
    const cells = [st.name, st.mode, st.state + (st.pause_reason ? ` (${st.pause_reason})` : ""), LT.fmt(st.rate),
      LT.fmt(st.achieved_rate), st.in_flight, st.sent, st.errors, st.dropped];
    cells.forEach((c, i) => { tr.cells[i].textContent = c; });
    const running = st.state === "running" || st.state === "paused" || st.state === "waiting";
    tr.querySelector("button.start").disabled = running || st.mode === "headroom" && st.state === "done";
    tr.querySelector("button.stop").disabled = !running;
  }
  for (const tr of rows.values()) tr.remove();
  drawPassive(doc.passive_headroom || []);
}

// drawPassive shows the handlers' passive headroom estimates of GET /llmtap/shadow beside the
// loads (the probe among them): each figure as the route gives it, rounded to 3 significant
// digits; an interval's open end is ∞, a figure the route leaves out "–" (docs/headroom.md).
function drawPassive(ests) {
  const note = document.getElementById("passive-note"), table = document.getElementById("passive");
  table.hidden = !ests.length;
  note.textContent = ests.length ? "passive headroom, from live traffic alone (estimate [low, high])" : "";
  const num = (v) => v == null ? "–" : Number(v.toPrecision(3)).toString();
  // Out of sight (no estimate), the low bound is the load seen: "≥ low".
  const iv = (i) => i.estimate == null ? (i.low == null ? "∞" : `≥ ${num(i.low)}`) : `${num(i.estimate)} [${num(i.low)}, ${i.high == null ? "∞" : num(i.high)}]`;
  const tbody = table.tBodies[0];
  tbody.textContent = "";
  for (const e of ests) {
    const tr = tbody.insertRow();
    tr.dataset.upstream = e.upstream;
    tr.dataset.state = e.state;
    for (const x of [e.upstream, num(e.ttft_objective_ms), e.state, e.requests, num(e.knee_concurrency), iv(e.slo_concurrency),
      iv(e.slo_requests_per_sec), num(e.current_requests_per_sec), iv(e.remaining_requests_per_sec),
      num(e.queue_onset_concurrency), num(e.kv_limit_concurrency), num(e.kv_cache_usage)]) {
      tr.insertCell().textContent = x;
    }
  }
}

// Decisions fills the canary and SLO tables from GET /llmtap/mirror (verdicts, pair counts,
// skip counters) and GET /llmtap/slo (attainment and burn rates over rolling windows). The
// figures are the routes' own, formatted: nothing is recomputed here.
const Decisions = {
  // fmt3 writes a ratio or rate with three decimals; null (an interval end the pairs cannot
  // bound yet) is infinite.
  fmt3(v, inf) { return v == null ? inf : v.toFixed(3); },
  pct(v) { return v == null ? "–" : (100 * v).toFixed(2) + "%"; },

  // skipped is the share of sampled live requests the mirror did not copy.
  skipped(c) {
    const n = Object.values(c.skipped || {}).reduce((a, b) => a + b, 0);
    return c.sampled ? n / c.sampled : null;
  },

  // needed is the pairs an undecided verdict waits for: the first look, or the most any
  // undecided comparison estimates it needs (null when none can tell yet, or when decided).
  needed(v) {
    if (v.verdict !== "not enough pairs yet") return null;
    if (v.look < 1) return v.next_look_at;
    const n = v.comparisons.filter((m) => m.count && m.verdict === v.verdict && m.pairs_needed > 0).map((m) => m.pairs_needed);
    return n.length ? Math.max(...n) : null;
  },

  async canary() {
    const note = document.getElementById("canary-note"), table = document.getElementById("canary");
    if (!ROUTES.has("/llmtap/mirror")) { note.textContent = "This server serves no /llmtap/mirror route."; return; }
    const res = await fetch("/llmtap/mirror", {cache: "no-store"});
    if (!res.ok) throw new Error(`GET /llmtap/mirror: ${res.status}`);
    const doc = await res.json();
    const vs = doc.verdicts || [];
    table.hidden = !vs.length;
    const c = doc.counters, skip = this.skipped(c);
    note.textContent = vs.length ?
      `mirrored ${c.sent} of ${c.sampled} sampled live requests, ${this.pct(skip)} skipped; a verdict is taken at each look (docs/canary.md)` :
      "No mirror pairs yet: mirroring is off, or no live request was copied yet.";
    const so = new Map((doc.pairs.models || []).map((m) => [m.model, m.pairs]));
    const tbody = table.tBodies[0];
    tbody.textContent = "";
    for (const v of vs) {
      const by = v.comparisons.find((m) => m.name === v.diverged);
      // The SLO attainment of each side, when the handler's SLOs judged the pairs.
      const att = v.comparisons.find((m) => m.name === "slo_attainment" && m.count);
      const tr = tbody.insertRow();
      tr.dataset.model = v.model;
      tr.dataset.verdict = v.verdict;
      const need = this.needed(v);
      // A rate's comparison (error rate, SLO attainment) is a difference mirror − live, not a
      // ratio: signed, and said so.
      const est = !by ? "–" : by.difference ? `${by.estimate == null ? "?" : (by.estimate >= 0 ? "+" : "") + by.estimate.toFixed(3)} (difference)` : this.fmt3(by.estimate, "∞");
      const cells = [v.model, v.verdict, v.diverged || "–", est,
        by ? `[${this.fmt3(by.low, "−∞")}, ${this.fmt3(by.high, "∞")}]` : "–", by ? by.margin : "–",
        v.pairs, so.get(v.model) ?? v.pairs, v.next_look_at || "–", need == null ? "–" : need, this.pct(skip),
        att ? `${this.pct(att.live)} / ${this.pct(att.mirror)}` : "–"];
      for (const x of cells) tr.insertCell().textContent = x;
    }
  },

  async slo() {
    const note = document.getElementById("slo-note"), table = document.getElementById("slo");
    if (!ROUTES.has("/llmtap/slo")) { note.textContent = "This server serves no /llmtap/slo route."; return; }
    const res = await fetch("/llmtap/slo", {cache: "no-store"});
    if (res.status === 404) { note.textContent = "No SLOs are configured on this server (slo blocks on the handler, docs/slo.md)."; table.hidden = true; return; }
    if (!res.ok) throw new Error(`GET /llmtap/slo: ${res.status}`);
    const doc = await res.json();
    const reps = doc.slos || [];
    table.hidden = !reps.length;
    note.textContent = reps.length ? "attainment per objective over rolling windows and since the start, against the SLO's target; burn rate = (1 − attainment of all) / (1 − target)" +
      (doc.dropped ? ` · ${doc.dropped} requests not counted (too many series)` : "") : "No live request has been counted against an SLO yet.";
    if (!reps.length) return;
    const spans = [...reps[0].windows.map((w) => w.window), "total"];
    table.tHead.innerHTML = "";
    const hr = table.tHead.insertRow();
    for (const h of ["SLO", "model", "objective", "threshold ms", "target", "requests", ...spans.map((s) => "attained " + s), ...spans.map((s) => "burn " + s)]) {
      const th = document.createElement("th"); th.textContent = h; hr.appendChild(th);
    }
    const tbody = table.tBodies[0];
    tbody.textContent = "";
    const threshold = {ttft: "ttft_ms", itl: "itl_ms", latency: "latency_ms"};
    for (const r of reps) {
      const all = [...r.windows, r.total];
      for (const obj of Object.keys(r.total.attainment || {}).sort((a, b) => (a === "all") - (b === "all") || a.localeCompare(b))) {
        const tr = tbody.insertRow();
        Object.assign(tr.dataset, {slo: r.slo, model: r.model, objective: obj});
        const cells = [r.slo, r.model, obj, obj === "all" ? "–" : r.thresholds[threshold[obj]], this.pct(r.target), r.total.requests,
          ...all.map((w) => this.pct(w.attainment ? w.attainment[obj] : null)),
          ...all.map((w) => obj === "all" && w.burn_rate != null ? w.burn_rate.toFixed(2) : "–")];
        for (const x of cells) tr.insertCell().textContent = x;
      }
    }
  },
};

async function tickDecisions() {
  try { await Decisions.canary(); await Decisions.slo(); } catch (e) { setStatus(String(e), true); }
}

function setStatus(text, bad) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = bad ? "bad" : "";
}

async function tick() {
  try {
    shown = await Source.poll();
    draw();
    document.body.dataset.points = shown.length;
    document.body.dataset.source = Source.kind;
    const p = shown[shown.length - 1];
    setStatus(p ? `updated ${LT.fmtTime(Date.now())} · ${Source.note} · ${p.in_flight} in flight` : `waiting for data · ${Source.note}`);
  } catch (e) {
    setStatus(String(e), true);
  }
}

async function tickSlowest() {
  try { drawSlowest(await Source.slowest(RECENT, 10)); } catch (e) { setStatus(String(e), true); }
}

tick(); tickSlowest(); refreshShadow(); tickUsage(); tickDecisions();
setInterval(tick, 1000);
setInterval(tickUsage, 2000);
setInterval(tickSlowest, 2000);
setInterval(refreshShadow, 1000);
setInterval(tickDecisions, 2000);
window.addEventListener("resize", draw);
