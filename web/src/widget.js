// The linked views as a notebook widget (anywidget): the same charts as the page, the
// kernel answering each brush (sparkprov.web.widget.LinkedWidget) with the code the
// page's server runs. Built into src/sparkprov/web/static/widget.js.

import { barChart, h } from "./charts.js";

function render({ model, el }) {
  const status = h("p", { class: "sparkprov-status" });
  const charts = model.get("charts").map((chart, i) =>
    barChart(chart, i, (index, groups, kind) => {
      if (kind === "brush") return; // the kernel answers the release of a drag
      charts.forEach((c, j) => j !== index && c.clear());
      model.send({ type: "brush", chart: index, groups: groups || [] });
    }),
  );
  const draw = () => {
    const counts = model.get("counts");
    charts.forEach((c, i) => c.draw(counts.length ? counts[i] : null));
    status.textContent = model.get("status");
  };
  model.on("change:counts", draw);
  model.on("change:status", draw);
  el.classList.add("sparkprov-linked");
  el.replaceChildren(status, h("div", { class: "charts" }, charts.map((c) => c.box)));
  draw();
  return () => {
    model.off("change:counts", draw);
    model.off("change:status", draw);
  };
}

export default { render };
