// report.js draws the charts of an llmtap report: the sections are embedded in the page as
// JSON (script#report-data) and drawn with LT, the dashboard's renderer.
"use strict";

(() => {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const root = document.getElementById("charts");
  for (const sec of data.sections) {
    const h = document.createElement("h2");
    h.textContent = sec.title;
    root.appendChild(h);
    if (sec.note) {
      const p = document.createElement("div");
      p.className = "note";
      p.textContent = sec.note;
      root.appendChild(p);
    }
    const grid = document.createElement("div");
    grid.className = "cols";
    grid.style.gridTemplateColumns = `repeat(${sec.cols}, minmax(0, 1fr))`;
    root.appendChild(grid);
    for (const c of sec.charts) {
      const card = document.createElement("div");
      card.className = "card";
      card.id = "chart-" + c.id;
      card.dataset.chart = c.id;
      grid.appendChild(card);
      LT.render(card, c);
    }
  }
  document.body.dataset.rendered = String(document.querySelectorAll("svg.chart").length);

  // Charts are drawn at their card's width: draw them again when the window changes size.
  const charts = new Map(data.sections.flatMap((sec) => sec.charts.map((c) => ["chart-" + c.id, c])));
  let pending = 0;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => charts.forEach((c, id) => LT.render(document.getElementById(id), c)), 150);
  });
})();
