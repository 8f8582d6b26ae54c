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
})();
