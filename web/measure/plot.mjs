import * as Plot from "@observablehq/plot";
import { run } from "./charts.mjs";

run((box, first) => {
  const draw = (values) => {
    const chart = Plot.plot({
      width: 360, height: 200, x: { type: "band", label: null }, y: { grid: true },
      marks: [Plot.barY(values, { x: "x", y: "full", fill: "#ccd" }), Plot.barY(values, { x: "x", y: "brushed", fill: "#2757c7" })],
    });
    for (const style of chart.querySelectorAll("style")) style.remove(); // as the page does (its policy)
    box.replaceChildren(chart);
  };
  draw(first);
  return async (values) => draw(values);
});
