// Which charting library redraws linked bar charts fastest under the page's
// Content-Security-Policy: five bar charts (full counts behind, brushed counts in
// front), 200 random updates, each timed from the update to the next painted frame.
// Built per library by measure.mjs; run by measure.py in Debian's Chromium.

const SIZES = [16, 12, 24, 20, 3]; // carriers, months, hours, delay bins, origins
const UPDATES = 200;

const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));

function data(n, scale) {
  return Array.from({ length: n }, (_, i) => ({ x: `g${i}`, full: 1000 + i * 37, brushed: Math.floor(Math.random() * scale * (1000 + i * 37)) }));
}

export async function run(make) {
  const root = document.getElementById("charts");
  const charts = SIZES.map((n) => {
    const box = document.createElement("div");
    root.append(box);
    return make(box, data(n, 1));
  });
  await frame();
  const times = [];
  const work = [];
  for (let u = 0; u < UPDATES; u++) {
    const values = SIZES.map((n) => data(n, Math.random()));
    await frame();
    const t0 = performance.now();
    await Promise.all(charts.map((update, i) => update(values[i])));
    work.push(performance.now() - t0); // the library's own work, before the browser paints
    await new Promise((r) => requestAnimationFrame(r));
    times.push(performance.now() - t0);
  }
  const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)];
  window.__result = { work_p50: q(work, 0.5), work_p95: q(work, 0.95), frame_p50: q(times, 0.5), frame_p95: q(times, 0.95) };
}
