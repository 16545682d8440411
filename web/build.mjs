// Builds the page's vendored assets: src/ bundled and minified into
// ../src/sparkprov/web/static, with BUILD.json recording the sources' SHA-256 (a test
// checks the vendored assets were built from the sources in the repo).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { build } from "esbuild";

const out = "../src/sparkprov/web/static";
const options = { bundle: true, minify: true, target: ["chrome110", "firefox110", "safari16"], outdir: out, legalComments: "eof" };
for (const entry of ["src/app.js", "src/app.css", "src/charts.css"]) await build({ ...options, entryPoints: [entry] });
// the notebook widget: an ES module, as anywidget loads it
await build({ ...options, entryPoints: ["src/widget.js"], format: "esm" });
const sources = {};
for (const name of readdirSync("src").sort()) {
  sources[name] = createHash("sha256").update(readFileSync(`src/${name}`)).digest("hex");
}
writeFileSync(`${out}/BUILD.json`, JSON.stringify({ sources }, null, 1) + "\n");
console.log("built", Object.keys(sources).join(", "), "into", out);
