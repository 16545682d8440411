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

const number = (v) => (v === null ? "no value" : v.toLocaleString("en", { maximumFractionDigits: 2 }));

// chart: its labels, the source rows behind each bar (total) and, where the bars measure
// more than a row count, the measure over them (value, null where none; measure names it)
export function barChart(chart, index, onBrush, href = null) {
  const measure = chart.measure || "count(*)";
  const heights = chart.value || chart.total;
  const known = heights.filter((v) => v !== null);
  const max = Math.max(1, ...known);
  const min = Math.min(0, ...known);
  // a row count or a sum of the brushed rows is a part of the bar: drawn over it; an
  // average or an extreme is not: drawn narrower, beside what it is compared with
  const part = /^(count|sum)\(/.test(measure);
  const bars = chart.labels.map((label, i) => ({ label, total: heights[i], rows: chart.total[i] }));
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
    y: { grid: true, domain: [min, max], label: measure === "count(*)" ? "rows" : measure },
    marks: [
      // a bar with no value (no rows, or only NULLs) is kept at zero: the n-th bar is group n
      Plot.barY(bars, {
        x: "label",
        y: (d) => d.total ?? 0,
        fill: FULL,
        title: (d) => `${d.label}: ${measure === "count(*)" ? "" : measure + " " + number(d.total) + " over "}${d.rows.toLocaleString("en")} rows`,
      }),
    ],
  });
  // Plot styles its charts with a <style> element, which the page's policy refuses:
  // the same rules are in charts.css
  for (const style of svg.querySelectorAll("style")) style.remove();
  const x = svg.scale("x");
  const y = svg.scale("y");
  const layer = select(svg).append("g").attr("class", "brushed");
  const [left, right] = x.range;
  const top = y.apply(max);
  const bottom = y.apply(min);
  const zero = y.apply(0);
  const at = (v) => y.apply(Math.max(min, Math.min(max, v))); // a brushed average may pass the full bars' range
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
      const data = counts ? counts.flatMap((n, i) => (n === null ? [] : [{ n, i }])) : [];
      const inset = part ? 0 : x.bandwidth * 0.2;
      layer
        .selectAll("rect")
        .data(data)
        .join((enter) => enter.append("rect").call((r) => r.append("title")))
        .attr("fill", BRUSHED)
        .attr("x", (d) => x.apply(chart.labels[d.i]) + inset)
        .attr("width", x.bandwidth - 2 * inset)
        .attr("y", (d) => Math.min(zero, at(d.n)))
        .attr("height", (d) => Math.abs(zero - at(d.n)))
        .attr("data-group", (d) => d.i)
        .attr("data-value", (d) => d.n)
        .select("title")
        .text((d) =>
          measure === "count(*)"
            ? `${chart.labels[d.i]}: ${d.n.toLocaleString("en")} of ${chart.total[d.i].toLocaleString("en")} rows brushed`
            : `${chart.labels[d.i]}: ${measure} ${number(d.n)} over the brushed rows (${number(heights[d.i])} over all)`,
        );
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
