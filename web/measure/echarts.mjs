import * as echarts from "echarts";
import { run } from "./charts.mjs";

run((box, first) => {
  box.style.width = "360px";
  box.style.height = "200px";
  const chart = echarts.init(box, null, { renderer: "canvas" });
  const option = (values) => ({
    animation: false,
    xAxis: { type: "category", data: values.map((v) => v.x) },
    yAxis: { type: "value" },
    series: [
      { type: "bar", data: values.map((v) => v.full), itemStyle: { color: "#ccd" }, barGap: "-100%" },
      { type: "bar", data: values.map((v) => v.brushed), itemStyle: { color: "#2757c7" } },
    ],
  });
  chart.setOption(option(first));
  return async (values) => chart.setOption(option(values));
});
