import * as Plot from "@observablehq/plot";
import { select } from "d3";
import { run } from "./charts.mjs";

// Plot draws the axes and the full bars once; d3 moves the brushed bars on each update
run((box, first) => {
  const chart = Plot.plot({
    width: 360, height: 200, x: { type: "band", label: null, domain: first.map((v) => v.x) }, y: { grid: true, domain: [0, Math.max(...first.map((v) => v.full))] },
    marks: [Plot.barY(first, { x: "x", y: "full", fill: "#ccd" })],
  });
  for (const style of chart.querySelectorAll("style")) style.remove();
  box.replaceChildren(chart);
  const x = chart.scale("x");
  const y = chart.scale("y");
  const layer = select(chart).append("g");
  return async (values) => {
    layer
      .selectAll("rect")
      .data(values)
      .join("rect")
      .attr("fill", "#2757c7")
      .attr("x", (d) => x.apply(d.x))
      .attr("width", x.bandwidth)
      .attr("y", (d) => y.apply(d.brushed))
      .attr("height", (d) => y.apply(0) - y.apply(d.brushed));
  };
});
