// charts.js draws llmtap's chart specs as SVG. The dashboard builds specs from live data, the
// report embeds specs computed in Go (report/chart.go); both render them here, so a chart looks
// the same in both. No dependencies.
//
// A spec: {id, title, kind: "line" | "step" | "bar", x: {label, time, log}, y: {label, log},
//          series: [{name, points: [[x, y], ...]}], bin (bar width in x units, for "bar")}
// Time axes hold milliseconds since the epoch. A null y breaks a line.
"use strict";

const LT = (() => {
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"];
  // CLASS_COLORS gives each traffic class its palette index, on every page and in the report's
  // PNGs (report/series.go classColors): live blue, mirror red, shadow green, replay purple.
  // Other keys (a class with its model) take the colors after them in their sorted order.
  const CLASS_COLORS = {live: 0, mirror: 1, shadow: 2, replay: 3};
  function colorOf(key, i) {
    return PALETTE[key in CLASS_COLORS ? CLASS_COLORS[key] : (4 + i) % PALETTE.length];
  }
  const H = 250, M = {l: 58, r: 14, t: 40, b: 36}, LEGEND_LINE = 14;

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  // niceTicks returns about n round values covering [lo, hi] (report/raster.go has the same rule).
  function niceTicks(lo, hi, n, minStep) {
    if (!(hi > lo)) { hi = lo + 1; }
    const raw = Math.max((hi - lo) / Math.max(1, n), minStep || 0);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / mag;
    const step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }

  function fmt(v) {
    const a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (a >= 100 || v === 0) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1).replace(/\.0$/, "");
    if (a >= 1) return v.toFixed(2).replace(/\.?0+$/, "");
    return v.toPrecision(2);
  }

  function fmtTime(ms) {
    const d = new Date(ms);
    const p = (x) => String(x).padStart(2, "0");
    return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
  }

  // extent returns [lo, hi] of the finite values of one coordinate over every series.
  function extent(series, i, log) {
    let lo = Infinity, hi = -Infinity;
    for (const s of series) for (const p of s.points) {
      const v = p[i];
      if (v == null || !isFinite(v) || (log && v <= 0)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    return lo <= hi ? [lo, hi] : null;
  }

  // render draws spec into container (replacing what was there) and returns the svg element.
  function render(container, spec) {
    const W = Math.max(320, container.clientWidth || 640);
    container.textContent = "";
    const svg = el("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img"}, container);
    el("text", {x: M.l, y: 18, class: "title"}, svg).textContent = spec.title || "";
    const series = (spec.series || []).filter((s) => s.points && s.points.length);
    const xs = spec.x || {}, ys = spec.y || {};
    let xe = extent(series, 0, xs.log), ye = extent(series, 1, ys.log);
    if (!xe || !ye) {
      el("text", {x: W / 2, y: H / 2, class: "empty", "text-anchor": "middle"}, svg).textContent = spec.empty || "no data yet";
      return svg;
    }
    if (spec.kind === "bar") xe = [xe[0], xe[1] + (spec.bin || 0)];
    if (!ys.log) ye = [Math.min(0, ye[0]), ye[1]];
    if (ye[1] === ye[0]) ye[1] = ye[0] + 1;
    if (xe[1] === xe[0]) xe[1] = xe[0] + 1;
    // Legend under the title, left to right, wrapping onto as many lines as it needs; the plot
    // starts below it (report/raster.go lays it out the same way).
    let lx = M.l, ly = 33;
    series.forEach((s, i) => {
      const t = el("text", {x: lx + 13, y: ly, class: "legend"}, svg);
      t.textContent = s.name;
      const w = (t.getComputedTextLength ? t.getComputedTextLength() : 0) || s.name.length * 6;
      if (lx > M.l && lx + 13 + w > W - M.r) {
        lx = M.l; ly += LEGEND_LINE;
        t.setAttribute("x", lx + 13); t.setAttribute("y", ly);
      }
      // A line's swatch is a stroke as the line is drawn (a dashed p99 beside a solid p50); a
      // bar's a square.
      const sc = s.color || PALETTE[i % PALETTE.length];
      if (spec.kind === "bar") el("rect", {x: lx, y: ly - 8, width: 9, height: 9, fill: sc}, svg);
      else el("line", {x1: lx - 1, x2: lx + 10, y1: ly - 3.5, y2: ly - 3.5, stroke: sc, "stroke-width": 2.4, "stroke-dasharray": s.dash ? "3,2" : "none", class: "swatch"}, svg);
      lx += w + 24;
    });
    const T = M.t + (ly - 33);
    const pw = W - M.l - M.r, ph = H - T - M.b;
    const tx = xs.log ? (v) => Math.log10(v) : (v) => v;
    const ty = ys.log ? (v) => Math.log10(v) : (v) => v;
    const [x0, x1] = [tx(xe[0]), tx(xe[1])], [y0, y1] = [ty(ye[0]), ty(ye[1] * (ys.log ? 1.2 : 1.05))];
    const X = (v) => M.l + (tx(v) - x0) / (x1 - x0) * pw;
    const Y = (v) => T + ph - (ty(v) - y0) / (y1 - y0) * ph;

    // Axes, grid and tick labels.
    const yt = ys.log ? logTicks(ye[0], ye[1] * 1.2) : niceTicks(ye[0], ye[1] * 1.05, 5);
    for (const v of yt) {
      const y = Y(v);
      if (y < T - 0.5 || y > T + ph + 0.5) continue;
      el("line", {x1: M.l, x2: M.l + pw, y1: y, y2: y, class: "grid"}, svg);
      el("text", {x: M.l - 6, y: y + 4, class: "tick", "text-anchor": "end"}, svg).textContent = fmt(v);
    }
    const xt = xs.log ? logTicks(xe[0], xe[1]) : niceTicks(xe[0], xe[1], Math.max(2, Math.floor(pw / (xs.time ? 75 : 60))), xs.time ? 1000 : 0);
    for (const v of xt) {
      const x = X(v);
      if (x < M.l - 0.5 || x > M.l + pw + 0.5) continue;
      el("line", {x1: x, x2: x, y1: T + ph, y2: T + ph + 4, class: "axis"}, svg);
      // A label at the right edge ends there instead of running past it.
      const anchor = x > W - M.r - 24 ? "end" : "middle";
      el("text", {x: anchor === "end" ? W - 2 : x, y: T + ph + 16, class: "tick", "text-anchor": anchor}, svg).textContent = xs.time ? fmtTime(v) : fmt(v);
    }
    el("line", {x1: M.l, x2: M.l + pw, y1: T + ph, y2: T + ph, class: "axis"}, svg);
    el("line", {x1: M.l, x2: M.l, y1: T, y2: T + ph, class: "axis"}, svg);
    if (xs.label) el("text", {x: M.l + pw, y: H - 4, class: "label", "text-anchor": "end"}, svg).textContent = xs.label;
    if (ys.label) el("text", {x: 12, y: T + ph / 2, class: "label", "text-anchor": "middle", transform: `rotate(-90 12 ${T + ph / 2})`}, svg).textContent = ys.label;

    // Data.
    series.forEach((s, i) => {
      const color = s.color || PALETTE[i % PALETTE.length];
      if (spec.kind === "bar") {
        const n = series.length, bw = Math.max(1, X(xe[0] + spec.bin) - X(xe[0]));
        for (const [x, y] of s.points) {
          if (y == null || y <= 0) continue;
          el("rect", {x: X(x) + bw * i / n, y: Y(y), width: Math.max(1, bw / n - 0.5), height: Math.max(0, Y(ye[0]) - Y(y)), fill: color, opacity: 0.85}, svg);
        }
      } else {
        let d = "", open = false, px = 0, py = 0;
        for (const [x, y] of s.points) {
          if (y == null || !isFinite(y) || (ys.log && y <= 0) || (xs.log && x <= 0)) { open = false; continue; }
          const sx = X(x).toFixed(1), sy = Y(y).toFixed(1);
          if (!open) d += `M${sx},${sy}`;
          else if (spec.kind === "step") d += `H${sx}V${sy}`;
          else d += `L${sx},${sy}`;
          open = true; px = sx; py = sy;
        }
        el("path", {d, fill: "none", stroke: color, "stroke-width": 1.6, "stroke-dasharray": s.dash ? "5,3" : "none"}, svg);
        if (s.points.length === 1) el("circle", {cx: px, cy: py, r: 2.5, fill: color}, svg);
      }
    });

    return svg;
  }

  function logTicks(lo, hi) {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(Math.pow(10, e));
    return out;
  }

  return {render, niceTicks, fmt, fmtTime, PALETTE, CLASS_COLORS, colorOf};
})();
