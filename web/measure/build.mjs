// npm run measure: bundles measure/<library>.mjs for measure.py (not vendored).
import { statSync } from "node:fs";
import { build } from "esbuild";

for (const lib of ["plot", "plotd3", "vega", "echarts"]) {
  await build({ entryPoints: [`measure/${lib}.mjs`], bundle: true, minify: true, outfile: `measure/dist/${lib}.js`, logLevel: "error" });
  console.log(lib, statSync(`measure/dist/${lib}.js`).size, "bytes minified");
}
