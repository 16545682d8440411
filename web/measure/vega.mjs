import embed from "vega-embed";
import { expressionInterpreter } from "vega-interpreter";
import { run } from "./charts.mjs";

const spec = (values) => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json", width: 360, height: 200, data: { name: "t", values },
  layer: [
    { mark: "bar", encoding: { x: { field: "x", type: "nominal", sort: null }, y: { field: "full", type: "quantitative" }, color: { value: "#ccd" } } },
    { mark: "bar", encoding: { x: { field: "x", type: "nominal", sort: null }, y: { field: "brushed", type: "quantitative" }, color: { value: "#2757c7" } } },
  ],
});
const views = [];
run((box, first) => {
  const ready = embed(box, spec(first), { actions: false, renderer: "svg", ast: true, expr: expressionInterpreter }).then((r) => r.view);
  return async (values) => {
    const view = await ready;
    await view.data("t", values).runAsync();
  };
});
