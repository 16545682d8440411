// The page's DOM helper and its linked bar charts, shared by the page (app.js) and the
// notebook widget (widget.js). Plot draws a chart once; d3 moves the brushed bars and
// runs the brush.

import * as Plot from "@observablehq/plot";
import { brushX, select } from "d3";

// an element with attributes ("on..." adds a listener) and children, text as text nodes
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export const FULL = "#c9cfdb";
export const BRUSHED = "#2757c7";

export function barChart(chart, index, onBrush, href = null) {
  const max = Math.max(1, ...chart.total);
  const bars = chart.labels.map((label, i) => ({ label, total: chart.total[i] }));
  const svg = Plot.plot({
    width: 440,
    height: 230,
    marginLeft: 60,
    marginBottom: chart.labels.length > 12 ? 52 : 32,
    x: {
      type: "band",
      domain: chart.labels,
      label: chart.x,
      tickRotate: chart.labels.length > 12 ? -60 : 0,
      tickFormat: (d) => (d.length > 12 ? d.slice(0, 11) + "…" : d), // whole in each bar's title
    },
    y: { grid: true, domain: [0, max], label: "rows" },
    marks: [Plot.barY(bars, { x: "label", y: "total", fill: FULL, title: (d) => `${d.label}: ${d.total.toLocaleString("en")} rows` })],
  });
  // Plot styles its charts with a <style> element, which the page's policy refuses:
  // the same rules are in charts.css
  for (const style of svg.querySelectorAll("style")) style.remove();
  const x = svg.scale("x");
  const y = svg.scale("y");
  const layer = select(svg).append("g").attr("class", "brushed");
  const [left, right] = x.range;
  const top = y.apply(max);
  const bottom = y.apply(0);
  const brush = brushX().extent([
    [left, top],
    [right, bottom],
  ]);
  const brushLayer = select(svg).append("g").attr("class", "brush").call(brush);
  const centers = chart.labels.map((label) => x.apply(label) + x.bandwidth / 2);
  const groupsIn = ([x0, x1]) => centers.flatMap((c, i) => (c >= x0 && c <= x1 ? [i] : []));
  brush.on("brush end", (event) => {
    if (!event.sourceEvent) return; // moved by the page itself
    onBrush(index, event.selection ? groupsIn(event.selection) : null, event.type, event.sourceEvent.timeStamp);
  });
  const name = href ? h("a", { href }, chart.capture) : chart.capture;
  const box = h("div", { class: "chart", "data-test": "chart-" + chart.capture }, h("h3", {}, name, h("span", { class: "count" }, ` by ${chart.x}`)), svg);
  return {
    box,
    draw(counts) {
      const data = counts ? counts.map((n, i) => ({ n, i })) : [];
      layer
        .selectAll("rect")
        .data(data)
        .join((enter) => enter.append("rect").call((r) => r.append("title")))
        .attr("fill", BRUSHED)
        .attr("x", (d) => x.apply(chart.labels[d.i]))
        .attr("width", x.bandwidth)
        .attr("y", (d) => y.apply(d.n))
        .attr("height", (d) => bottom - y.apply(d.n))
        .attr("data-group", (d) => d.i)
        .select("title")
        .text((d) => `${chart.labels[d.i]}: ${d.n.toLocaleString("en")} of ${chart.total[d.i].toLocaleString("en")} rows brushed`);
      layer.raise();
      brushLayer.raise();
    },
    clear() {
      brushLayer.call(brush.move, null);
    },
    select(groups) {
      const lo = x.apply(chart.labels[groups[0]]);
      const hi = x.apply(chart.labels[groups[groups.length - 1]]) + x.bandwidth;
      brushLayer.call(brush.move, [lo, hi]);
    },
  };
}
