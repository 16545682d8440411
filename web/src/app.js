// sparkprov's page: the captures in a store, one capture's plan and rows, and traces
// through its lineage. Built into src/sparkprov/web/static/app.js (npm run build).
//
// Every value from the store reaches the page as text (textContent), never as markup,
// and every view lives in the address's fragment, so it can be reloaded and shared.

import * as Plot from "@observablehq/plot";
import { BRUSHED, barChart, h } from "./charts.js";

const PAGE = 50; // output and source rows per page
const CAPTURES_PAGE = 100;

// DOM ------------------------------------------------------------------------------


function cell(value) {
  if (value === null) return h("td", { class: "null" }, "NULL");
  if (typeof value === "object") return h("td", {}, JSON.stringify(value));
  return h("td", { class: typeof value === "number" ? "num" : "" }, String(value));
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return i === 0 ? `${n} B` : `${n.toFixed(1)} ${units[i]}`;
}

const count = (n, what, plural = what + "s") => `${n.toLocaleString("en")} ${n === 1 ? what : plural}`;

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

// the server ---------------------------------------------------------------------------

async function api(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, init);
  const text = await response.text();
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(text || `${response.status} ${response.statusText}`);
  }
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

const enc = encodeURIComponent;
const captureApi = (name, version) => `/api/captures/${enc(name)}/${version}`;

// the address --------------------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

function go(parts, params) {
  const query = new URLSearchParams([...params].filter(([, v]) => v !== "" && v !== null && v !== undefined)).toString();
  const hash = "#/" + parts.map(enc).join("/") + (query ? "?" + query : "");
  if (location.hash !== hash) location.hash = hash;
  else render();
}

// a table of rows with optional checkboxes --------------------------------------------

function rowsTable(answer, { test, selected, onToggle, sort, onSort }) {
  const head = answer.columns.map((c) => {
    const mark = sort && sort.order === c ? (sort.desc ? " ▼" : " ▲") : "";
    return h("th", onSort ? { class: "sortable", onclick: () => onSort(c), title: "sort by " + c } : {}, c + mark);
  });
  const body = answer.rows.map((row, i) => {
    const rid = answer.rids[i];
    const box = selected
      ? h("td", {}, h("input", { type: "checkbox", checked: selected.has(rid), "aria-label": "select row " + rid, onchange: (e) => onToggle(rid, e.target.checked) }))
      : null;
    return h("tr", { "data-rid": rid }, box, row.map(cell));
  });
  return h("table", { "data-test": test }, h("thead", {}, h("tr", {}, selected ? h("th", {}, "") : null, head)), h("tbody", {}, body));
}

function pager(offset, total, onPage, size = PAGE, noun = "rows") {
  const last = Math.min(offset + size, total);
  const n = (k) => k.toLocaleString("en");
  return h(
    "div",
    { class: "pager" },
    h("button", { disabled: offset === 0, onclick: () => onPage(Math.max(0, offset - size)) }, "‹ previous"),
    h("span", { class: "range" }, total ? `${noun} ${n(offset + 1)}–${n(last)} of ${n(total)}` : `no ${noun}`),
    h("button", { disabled: last >= total, onclick: () => onPage(offset + size) }, "next ›"),
  );
}

// the captures ------------------------------------------------------------------------

async function capturesView(params) {
  const like = params.get("like") || "";
  const offset = Number(params.get("offset") || 0);
  const filter = h("input", { type: "search", placeholder: "filter by name", value: like, "aria-label": "filter captures by name" });
  let timer;
  filter.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => go([], new URLSearchParams({ like: filter.value })), 250);
  });
  if (like) setTimeout(() => filter.focus(), 0); // typing goes on in the redrawn box
  const [data, session] = await Promise.all([api(`/api/captures?${new URLSearchParams({ like, offset, limit: CAPTURES_PAGE })}`), api("/api/session")]);
  const picked = new Set();
  const linkButton = h(
    "button",
    { disabled: true, "data-test": "link", onclick: () => go(["linked"], new URLSearchParams([...picked].map((n) => ["c", n]))) },
    "Link selected captures as charts",
  );
  const rows = data.captures.map((c) => {
    const link = h("a", { href: `#/c/${enc(c.name)}/${c.version}` }, c.name);
    const pick = h("input", {
      type: "checkbox",
      "aria-label": "link " + c.name,
      disabled: Boolean(c.failed || c.damaged),
      onchange: (e) => {
        if (e.target.checked) picked.add(c.name);
        else picked.delete(c.name);
        linkButton.disabled = picked.size < 2;
      },
    });
    const status = c.failed ? h("span", { class: "bad" }, "failed: " + c.failed.reason) : c.damaged ? h("span", { class: "bad" }, "damaged: " + c.damaged) : "ok";
    return h(
      "tr",
      { "data-name": c.name },
      h("td", {}, pick),
      h("td", {}, link),
      h("td", { class: "num" }, `v${c.version}` + (c.versions.length > 1 ? ` (${c.versions.length})` : "")),
      h("td", {}, c.created || ""),
      h("td", {}, c.strategy || ""),
      h("td", { class: "num" }, c.seconds == null ? "" : c.seconds.toFixed(1)),
      h("td", { class: "num" }, c.rows == null ? "" : c.rows.toLocaleString("en")),
      h("td", { class: "num" }, c.bytes == null ? "" : bytes(c.bytes)),
      h("td", {}, (c.sources || []).join(", ")),
      h("td", {}, status),
    );
  });
  const header = ["", "name", "version", "created", "strategy", "seconds", "rows", "size", "sources", "status"].map((t) => h("th", {}, t));
  return [
    h("h1", {}, "Captures"),
    session.capturing ? captureForm(session.tables) : null,
    graphPanel(),
    h("div", { class: "toolbar" }, filter, h("span", { class: "count" }, count(data.total, "capture")), linkButton),
    data.total
      ? [
          h("table", { "data-test": "captures" }, h("thead", {}, h("tr", {}, header)), h("tbody", {}, rows)),
          data.total > CAPTURES_PAGE ? pager(offset, data.total, (o) => go([], new URLSearchParams({ like, offset: o })), CAPTURES_PAGE, "captures") : null,
        ]
      : h("p", { class: "empty" }, like ? `no capture's name contains “${like}”` : "no captures in this store yet"),
  ];
}

// a query captured from the page, by the session serving it
function captureForm(tables) {
  const name = h("input", { type: "text", placeholder: "name", "aria-label": "capture name", size: 24 });
  const sql = h("textarea", { rows: 4, cols: 80, placeholder: "SELECT k, count(*) AS n FROM t GROUP BY k", "aria-label": "query to capture" });
  const witnesses = h("input", { type: "checkbox", "aria-label": "keep witnesses" });
  const progress = h("div", { class: "toolbar", "data-test": "capture-progress" });
  const start = async () => {
    showError("");
    const done = await followJob(progress, `capturing ${name.value}`, () => api("/api/capture", { name: name.value, sql: sql.value, witnesses: witnesses.checked }));
    if (!done) return;
    const r = done.job.result;
    done.state.replaceChildren(`captured in ${done.job.seconds.toFixed(1)} s: `, h("a", { href: `#/c/${enc(r.name)}/${r.version}`, "data-test": "captured" }, `${r.name} v${r.version}`), ` (${count(r.rows, "output row")})`);
  };
  return h(
    "details",
    { class: "capture-form", "data-test": "capture-form" },
    h("summary", {}, "Capture a query"),
    h("div", { class: "toolbar" }, name, h("label", {}, witnesses, " keep witnesses (why/how)"), h("button", { onclick: start, "data-test": "capture" }, "Capture")),
    sql,
    h("p", { class: "count" }, tables.length ? `the session's tables: ${tables.join(", ")}` : "the session has no tables: register DataFrames with createOrReplaceTempView"),
    progress,
  );
}

// the store's lineage graph (the IBM paper's triples and components): how current its
// build is, and a new build as a job where a session serves the page. Filled in once
// its answer comes: reading every capture to find the stale ones must not hold the list.
function graphPanel() {
  const box = h("div", { class: "toolbar", "data-test": "graph" });
  const progress = h("div", { class: "toolbar" });
  const show = async () => {
    const g = await api("/api/graph");
    const what = g.built
      ? `Lineage graph: build ${g.build} of ${g.created}, ${count(g.nodes, "node")}, ${count(g.edges, "edge")}, ${count(g.components, "component")}` +
        (g.stale.length ? `; ${count(g.stale.length, "capture version")} made or removed since` : "; current")
      : "Lineage graph: not built";
    const build = g.building ? h("button", { "data-test": "build-graph", onclick: start }, g.built ? "Rebuild" : "Build") : null;
    box.replaceChildren(h("span", { "data-test": "graph-status" }, what), build, progress);
  };
  const start = async () => {
    showError("");
    const done = await followJob(progress, "building the lineage graph", () => api("/api/graph/build", {}));
    if (!done) return;
    done.state.textContent = `built in ${done.job.seconds.toFixed(1)} s`;
    await show().catch((e) => showError(e.message));
  };
  show().catch((e) => showError(e.message));
  return box;
}

// one capture -------------------------------------------------------------------------

function planSection(cap) {
  const coarse = cap.plan.filter((p) => !p.granularity.startsWith("exact")).length;
  const rows = cap.plan.map((p) => {
    const op = h("td", { class: "op" }, p.operator);
    op.style.paddingLeft = `${Math.max(0, p.depth - 1) * 1.2 + 0.4}em`; // CSSOM: the policy refuses style attributes
    return h("tr", {}, op, h("td", {}, h("span", { class: p.granularity.startsWith("exact") ? "exact" : "coarse" }, p.granularity)), h("td", {}, p.strategy));
  });
  return h(
    "section",
    {},
    h("h2", {}, "Plan"),
    h("p", {}, `${count(cap.plan.length, "operator")}, ${coarse ? coarse + " coarse" : "all exact"}` + (cap.witnesses ? "; witnesses kept (why/how)" : "")),
    h("table", { "data-test": "plan" }, h("thead", {}, h("tr", {}, h("th", {}, "operator"), h("th", {}, "lineage"), h("th", {}, "how captured"))), h("tbody", {}, rows)),
    h(
      "ul",
      { class: "sources", "data-test": "sources" },
      cap.sources.map((s) => {
        const w = cap.writers[s.name];
        return h("li", {}, h("b", {}, s.name), `: ${s.format}, ${count(s.files, "file")} (${s.kind})`, w ? [", written by ", h("a", { href: `#/c/${enc(w.name)}/${w.version}` }, `${w.name} v${w.version}`)] : null);
      }),
    ),
    cap.readers.length
      ? h("p", { "data-test": "readers" }, "Its output was read by ", cap.readers.map((r, i) => [i ? ", " : "", h("a", { href: `#/c/${enc(r.name)}/${r.version}` }, `${r.name} v${r.version}`), ` (as ${r.source})`]))
      : null,
  );
}

// the output columns naming a row of an aggregate's output (its grouping columns), so a
// replay's diff shows a group whose values moved as changed; null for other plans
function groupingKey(cap) {
  const found = /^Aggregate \[([^\]]*)\]/.exec(cap.plan.length ? cap.plan[0].operator : "");
  if (!found) return null;
  const names = found[1]
    .split(",")
    .map((s) => s.trim().replace(/#\d+L?$/, ""))
    .filter(Boolean);
  return names.length && names.every((n) => cap.columns.includes(n)) ? names : null;
}

async function captureView(parts, params) {
  const [name, versionText] = parts;
  const version = Number(versionText);
  const cap = await api(`/api/captures/${enc(name)}?version=${version}`);
  const base = captureApi(name, version);
  const where = params.get("where") || "";
  const order = params.get("order") || "";
  const desc = params.get("desc") === "1";
  const offset = Number(params.get("offset") || 0);
  const selected = new Set((params.get("sel") || "").split(",").filter(Boolean));
  const traced = params.get("trace"); // "sel" or "where": the backward trace shown
  const update = (changes) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) next.set(k, v);
    go(["c", name, String(version)], next);
  };

  const query = new URLSearchParams({ offset, limit: PAGE });
  if (where) query.set("where", where);
  if (order) query.set("order", order);
  if (desc) query.set("desc", "1");
  const page = await api(`${base}/rows?${query}`);

  const predicate = h("input", { type: "text", value: where, placeholder: "Spark SQL predicate, e.g. total > 100", "aria-label": "filter output rows", size: 48 });
  const apply = () => update({ where: predicate.value, offset: 0, trace: traced === "where" ? "where" : traced || "" });
  predicate.addEventListener("keydown", (e) => e.key === "Enter" && apply());
  const toggle = (rid, on) => {
    if (on) selected.add(rid);
    else selected.delete(rid);
    params.set("sel", [...selected].join(","));
    history.replaceState(null, "", "#/c/" + enc(name) + "/" + version + "?" + params);
    backwardButton.disabled = selected.size === 0;
    if (provButton) provButton.disabled = selected.size === 0;
    readerButtons.forEach((b) => (b.disabled = selected.size === 0));
    selCount.textContent = selected.size ? `${count(selected.size, "row")} selected` : "";
  };
  const backwardButton = h("button", { disabled: selected.size === 0, onclick: () => update({ trace: "sel" }), "data-test": "trace-selected" }, "Trace selected rows backward");
  const readerButtons = intoReaders(cap.readers, () => [...selected]);
  const provButton = cap.witnesses
    ? h("button", { disabled: selected.size === 0, onclick: () => update({ prov: "1" }), "data-test": "why-how" }, "Why and how")
    : null;
  const selCount = h("span", { class: "count" }, selected.size ? `${count(selected.size, "row")} selected` : "");
  const versions = cap.versions.map((v) => (v === version ? h("b", {}, `v${v}`) : h("a", { href: `#/c/${enc(name)}/${v}` }, `v${v}`)));

  const output = h(
    "section",
    {},
    h("h2", {}, "Output rows"),
    h(
      "div",
      { class: "toolbar" },
      predicate,
      h("button", { onclick: apply }, "Filter"),
      h("button", { onclick: () => update({ trace: "where" }), "data-test": "trace-matching" }, `Trace all ${count(page.total, "matching row")} backward`),
      backwardButton,
      provButton,
      readerButtons,
      selCount,
    ),
    rowsTable(page, {
      test: "output",
      selected,
      onToggle: toggle,
      sort: { order, desc },
      onSort: (c) => update({ order: c, desc: order === c && !desc ? "1" : "", offset: 0 }),
    }),
    pager(offset, page.total, (o) => update({ offset: o })),
  );
  const prov = params.get("prov") && selected.size ? await provenanceSection(base, [...selected]) : null;
  const replay = cap.replayable ? { key: groupingKey(cap) } : null;
  const trace = traced ? await backwardSection(base, traced === "where" ? { where: where || "true" } : { rids: [...selected] }, params, update, replay, cap.writers) : null;
  // forward from source rows picked elsewhere (an earlier capture's output, traced on)
  const onward = !traced && params.get("fsrc") && params.get("fsel") ? await forwardSection(base, params.get("fsrc"), params.get("fsel").split(","), cap.readers) : null;
  return [
    h("h1", {}, cap.name, " ", h("span", { class: "versions" }, versions)),
    h("p", { class: "meta" }, [cap.created, cap.strategy && `strategy ${cap.strategy}`, cap.rows != null && count(cap.rows, "output row"), cap.bytes != null && bytes(cap.bytes)].filter(Boolean).join(" · ")),
    planSection(cap),
    fdForm(cap),
    output,
    prov,
    trace,
    onward,
  ];
}

async function backwardSection(base, start, params, update, replay, writers = {}) {
  if (start.rids && start.rids.length === 0) return null;
  const first = await api(`${base}/backward`, { ...start, limit: PAGE });
  const section = h("section", { "data-test": "backward" }, h("h2", {}, "Backward: ", count(first.matched, "output row"), " traced to the sources"));
  const whatIf = h("div", { class: "what-if" });
  const forwardSource = params.get("fsrc");
  const forwardRids = new Set((params.get("fsel") || "").split(",").filter(Boolean));
  for (const [source, answer] of Object.entries(first.sources)) {
    const picked = source === forwardSource ? forwardRids : new Set();
    const box = h("div", { class: "relation" });
    const draw = (ans) => {
      const button = h(
        "button",
        { disabled: picked.size === 0, "data-test": "trace-forward", onclick: () => update({ fsrc: source, fsel: [...picked].join(",") }) },
        "Trace selected forward",
      );
      const dropButton = replay
        ? h(
            "button",
            { disabled: picked.size === 0, "data-test": "what-if", onclick: () => runWhatIf(base, { [source]: [...picked] }, replay.key, whatIf) },
            "What if these rows were not there?",
          )
        : null;
      const onToggle = (rid, on) => {
        if (on) picked.add(rid);
        else picked.delete(rid);
        button.disabled = picked.size === 0;
        if (dropButton) dropButton.disabled = picked.size === 0;
      };
      const table = rowsTable(ans, { test: "backward-" + source, selected: picked, onToggle });
      const pages = pager(ans.offset, ans.count, async (o) => {
        try {
          draw((await api(`${base}/backward`, { ...start, source, offset: o, limit: PAGE })).sources[source]);
        } catch (err) {
          showError(err.message);
        }
      });
      // the rows of a source an earlier capture wrote are its output rows (same rids)
      const writer = writers[source];
      const onward = writer
        ? h(
            "button",
            {
              "data-test": "trace-on",
              onclick: () => go(["c", writer.name, String(writer.version)], new URLSearchParams({ sel: (picked.size ? [...picked] : ans.rids).join(","), trace: "sel" })),
              title: "the picked rows, or those on this page",
            },
            `Trace on through ${writer.name} v${writer.version}`,
          )
        : null;
      box.replaceChildren(
        h("h3", {}, source, ": ", count(ans.count, "row")),
        table,
        h("div", { class: "toolbar" }, pages, button, dropButton, onward),
        replay ? dropWhere(source, (predicate) => runWhatIf(base, { [source]: predicate }, replay.key, whatIf)) : null,
      );
    };
    draw(answer);
    section.append(box);
  }
  section.append(whatIf);
  if (forwardSource && forwardRids.size) section.append(await forwardSection(base, forwardSource, [...forwardRids], []));
  return section;
}

async function provenanceSection(base, rids) {
  const ans = await api(`${base}/provenance`, { rids: rids.slice(0, 50) });
  const more = (shown, total, what) => (total > shown ? ` … and ${(total - shown).toLocaleString("en")} more ${what}` : "");
  return h(
    "section",
    { "data-test": "provenance" },
    h("h2", {}, "Why and how"),
    ans.rows.map((r) =>
      h(
        "div",
        { class: "relation", "data-rid": r.rid },
        h("table", {}, h("thead", {}, h("tr", {}, ans.columns.map((c) => h("th", {}, c)))), h("tbody", {}, h("tr", {}, r.row.map(cell)))),
        h("p", { "data-test": "how" }, h("b", {}, "how: "), h("code", {}, r.how + more(r.how.length, r.how_chars, "characters"))),
        h("p", {}, h("b", {}, `why: ${count(r.witnesses, "witness", "witnesses")}`), " (each a set of source rows that alone derives the row)"),
        h(
          "ol",
          { "data-test": "why" },
          r.why.map((w) => h("li", {}, w.rows.map(([s, rid]) => `${s}#${rid}`).join(", ") + more(w.rows.length, w.size, "rows"))),
        ),
        r.witnesses > r.why.length ? h("p", { class: "count" }, more(r.why.length, r.witnesses, "witnesses")) : null,
      ),
    ),
  );
}

// long work on the server (a replay, a capture): started by start(), its progress (tasks
// of its Spark stages) shown in box until it ends; the finished job, or null if it did not
async function followJob(box, doing, start) {
  const bar = h("progress", { max: 1, value: 0 });
  const state = h("span", { class: "count", "data-test": "job-state" }, `starting: ${doing}…`);
  let job;
  const cancel = h("button", { "data-test": "cancel", onclick: () => job && api(`/api/jobs/${job.id}/cancel`, {}).catch((e) => showError(e.message)) }, "Cancel");
  box.replaceChildren(bar, state, cancel);
  try {
    job = await start();
    while (job.state === "running") {
      bar.max = Math.max(1, job.tasks);
      bar.value = job.tasks_done;
      state.textContent = `${doing}: ${job.tasks_done} of ${job.tasks} tasks in ${count(job.stages, "stage")}, ${job.seconds.toFixed(1)} s`;
      await new Promise((r) => setTimeout(r, 200));
      job = await api(`/api/jobs/${job.id}`);
    }
  } catch (err) {
    box.replaceChildren();
    showError(err.message);
    return null;
  }
  cancel.remove();
  if (job.state !== "done") {
    state.textContent = job.state === "cancelled" ? "cancelled" : `failed: ${job.error}`;
    return null;
  }
  bar.remove();
  return { job, state };
}

// what-if without every row of a source a predicate holds for (not only those traced)
function dropWhere(source, run) {
  const predicate = h("input", { type: "text", size: 40, placeholder: "Spark SQL predicate, e.g. amount > 100", "aria-label": `leave out rows of ${source} where` });
  const go = () => predicate.value.trim() && run(predicate.value);
  predicate.addEventListener("keydown", (e) => e.key === "Enter" && go());
  return h("div", { class: "toolbar" }, `What if the rows of ${source} where `, predicate, h("button", { "data-test": "what-if-where", onclick: go }, "were not there?"));
}

// what-if: the capture replayed without the picked rows, as a job with progress
async function runWhatIf(base, drop, key, box) {
  const progress = h("div", { class: "toolbar" });
  box.replaceChildren(h("h2", {}, "What if"), progress);
  const done = await followJob(progress, "replaying", () => api(`${base}/replay`, { drop, key }));
  if (!done) return;
  const { job, state } = done;
  const r = job.result;
  const dropped = Object.entries(r.dropped).map(([s, n]) => `${count(n, "row")} of ${s}`).join(", ");
  state.textContent = `without ${dropped}: ${count(r.removed.count, "output row")} removed, ${r.added.count} added` + (r.changed ? `, ${r.changed.count} changed` : "") + ` (${job.seconds.toFixed(1)} s)`;
  for (const part of ["changed", "removed", "added"]) {
    if (!r[part] || !r[part].count) continue;
    box.append(h("h3", {}, `${part}: ${count(r[part].count, "row")}`), diffTable(r[part], part));
  }
}

function diffTable(part, test) {
  const was = (c) => "__sp_was_" + c;
  const shown = part.columns.filter((c) => !c.startsWith("__sp_was_"));
  const rows = part.rows.map((row) => {
    const value = Object.fromEntries(part.columns.map((c, i) => [c, row[i]]));
    return h(
      "tr",
      {},
      shown.map((c) => (was(c) in value && value[was(c)] !== value[c] ? h("td", { class: "changed" }, `${value[was(c)] ?? "NULL"} → ${value[c] ?? "NULL"}`) : cell(value[c]))),
    );
  });
  return h("table", { "data-test": "diff-" + test }, h("thead", {}, h("tr", {}, shown.map((c) => h("th", {}, c)))), h("tbody", {}, rows));
}

// buttons that carry output rows on into the captures that read this output
function intoReaders(readers, rids) {
  return readers.map((r) =>
    h(
      "button",
      {
        "data-test": "forward-on",
        disabled: rids().length === 0,
        onclick: () => go(["c", r.name, String(r.version)], new URLSearchParams({ fsrc: r.source, fsel: rids().join(",") })),
      },
      `Forward on into ${r.name} v${r.version}`,
    ),
  );
}

async function forwardSection(base, source, rids, readers) {
  const box = h("section", { "data-test": "forward" });
  const draw = async (offset) => {
    const ans = await api(`${base}/forward`, { source, rids, offset, limit: PAGE });
    box.replaceChildren(
      h("h2", {}, "Forward: ", count(ans.matched, `row`), ` of ${source} contributed to `, count(ans.count, "output row")),
      rowsTable(ans, { test: "forward" }),
      h("div", { class: "toolbar" }, pager(ans.offset, ans.count, (o) => draw(o).catch((e) => showError(e.message))), intoReaders(readers, () => ans.rids)),
    );
  };
  await draw(0);
  return box;
}

// profiling (Smoke 6.5.2) ----------------------------------------------------------------
// A functional dependency a → b over a capture's output rows: the values of a with more
// than one value of b, drawn as a bipartite graph; a link's rows traced backward.

function fdForm(cap) {
  const pick = (label) => h("select", { "aria-label": label }, cap.columns.map((c) => h("option", { value: c }, c)));
  const a = pick("dependency from");
  const b = pick("dependency to");
  if (cap.columns.length > 1) b.selectedIndex = 1;
  const check = () => go(["fd", cap.name, String(cap.version)], new URLSearchParams({ a: a.value, b: b.value }));
  return h("div", { class: "toolbar" }, "Functional dependency ", a, " → ", b, h("button", { onclick: check, "data-test": "check-fd" }, "Check"));
}

async function profileView(parts, params) {
  const [name, versionText] = parts;
  const base = captureApi(name, Number(versionText));
  const a = params.get("a") || "";
  const b = params.get("b") || "";
  const ans = await api(`${base}/violations?${new URLSearchParams({ a, b })}`);
  const title = [h("h1", {}, h("a", { href: `#/c/${enc(name)}/${versionText}` }, name), ` : ${a} → ${b}`)];
  if (!ans.violating) return [...title, h("p", { "data-test": "fd-summary" }, `the dependency holds: every ${a} has one ${b}`)];
  const left = [...new Set(ans.pairs.map((p) => JSON.stringify(p.a)))];
  const right = [...new Set(ans.pairs.map((p) => JSON.stringify(p.b)))];
  const y = (list, v) => list.indexOf(JSON.stringify(v));
  const links = ans.pairs.map((p) => ({ ...p, ya: y(left, p.a), yb: y(right, p.b) }));
  const label = (s) => {
    const v = JSON.parse(s);
    const t = v === null ? "NULL" : String(v);
    return t.length > 24 ? t.slice(0, 23) + "…" : t;
  };
  const span = Math.max(left.length, right.length);
  const svg = Plot.plot({
    width: 640,
    height: Math.max(120, span * 18 + 40),
    x: { domain: [0, 1], axis: null, inset: 180 },
    y: { domain: [-0.5, span - 0.5], axis: null, reverse: true },
    marks: [
      Plot.link(links, { x1: 0, y1: (d) => d.ya * (span / left.length), x2: 1, y2: (d) => d.yb * (span / right.length), stroke: BRUSHED, strokeOpacity: 0.5, strokeWidth: (d) => 1 + Math.log2(d.n), title: (d) => `${d.n} rows` }),
      Plot.text(left, { x: 0, y: (_, i) => i * (span / left.length), text: label, textAnchor: "end", dx: -6 }),
      Plot.text(right, { x: 1, y: (_, i) => i * (span / right.length), text: label, textAnchor: "start", dx: 6 }),
    ],
  });
  for (const style of svg.querySelectorAll("style")) style.remove();
  const traced = h("div");
  svg.querySelectorAll('g[aria-label="link"] path').forEach((path, i) => {
    path.classList.add("fd-link");
    path.addEventListener("click", async () => {
      try {
        traced.replaceChildren(await backwardSection(base, { rids: links[i].rids }, new URLSearchParams(), () => {}, null));
      } catch (err) {
        showError(err.message);
      }
    });
  });
  return [
    ...title,
    h("p", { "data-test": "fd-summary" }, `${count(ans.violating, `value of ${a} has`, `values of ${a} have`)} more than one ${b}` + (ans.shown < ans.violating ? ` (the ${ans.shown} with most rows shown)` : "") + "; click a link for the source rows behind its rows"),
    h("div", { class: "chart", "data-test": "bipartite" }, svg),
    traced,
  ];
}

// linked views ---------------------------------------------------------------------------
// Each capture a bar chart (charts.js) of the source rows behind its groups; brushing
// bars of one traces them backward to the source rows and forward to every chart's
// groups (the server's answer), drawn in front of the full bars.

window.__sparkprovBrushes = []; // each brush's time from its event to every chart redrawn (ms)

async function linkedView(params) {
  const names = params.getAll("c");
  if (names.length < 2) throw new Error("pick two captures or more to link (tick them in the list of captures)");
  const query = new URLSearchParams(names.map((n) => ["c", n]));
  for (const x of params.getAll("x")) query.append("x", x);
  if (params.get("m")) query.set("m", params.get("m"));
  const data = await api("/api/linked?" + query);
  const idle = `${data.rows.toLocaleString("en")} rows of ${data.source}; brush bars to filter the other charts`;
  const status = h("p", { class: "count", "data-test": "linked-status" }, idle);
  const body = { captures: names, x: params.getAll("x").length ? params.getAll("x") : null, measure: data.measure };
  // one brush answered at a time: while it is, the latest other brush waits, and the
  // end of a drag over the bars being answered is that answer, not another
  let answering = null; // the key of the brush being answered
  let waiting = null;
  let ended = null;
  const keyOf = (index, groups) => `${index}:${groups ? groups.join(",") : ""}`;
  const remember = (index, groups) => {
    const next = new URLSearchParams(params);
    next.delete("b");
    if (groups && groups.length) next.set("b", `${index}:${groups[0]}-${groups[groups.length - 1]}`);
    history.replaceState(null, "", "#/linked?" + next);
  };
  const answer = async (index, groups, kind, since) => {
    const key = keyOf(index, groups);
    if (answering !== null) {
      if (key === answering && kind !== "brush") ended = { kind, since };
      else if (key !== answering) waiting = [index, groups, kind, since];
      return;
    }
    answering = key;
    try {
      charts.forEach((c, i) => i !== index && kind !== "restore" && c.clear());
      const brushed = groups && groups.length ? await api("/api/linked/brush", { ...body, chart: index, groups }) : null;
      charts.forEach((c, i) => c.draw(brushed ? brushed.counts[i] : null));
      status.textContent = brushed
        ? `${brushed.brushed.toLocaleString("en")} of ${data.rows.toLocaleString("en")} rows brushed in ${data.charts[index].capture}`
        : idle;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const now = performance.now();
      const n = groups ? groups.length : 0;
      window.__sparkprovBrushes.push({ kind, ms: now - since, groups: n });
      if (ended) window.__sparkprovBrushes.push({ kind: ended.kind, ms: now - ended.since, groups: n });
      if (kind !== "brush" || ended) remember(index, groups);
    } catch (err) {
      showError(err.message);
    } finally {
      answering = null;
      ended = null;
      if (waiting) {
        const next = waiting;
        waiting = null;
        answer(...next);
      }
    }
  };
  const charts = data.charts.map((c, i) => barChart({ ...c, measure: data.measure }, i, answer, `#/c/${enc(c.capture)}/${c.version}`));
  const restore = /^(\d+):(\d+)-(\d+)$/.exec(params.get("b") || "");
  if (restore) {
    const [index, lo, hi] = restore.slice(1).map(Number);
    if (charts[index] && hi < data.charts[index].labels.length) {
      const groups = Array.from({ length: hi - lo + 1 }, (_, k) => lo + k);
      setTimeout(() => {
        charts[index].select(groups);
        answer(index, groups, "restore", performance.now());
      }, 0);
    }
  }
  const drilled = data.drill_down.map(([i, j]) => `${data.charts[j].capture} from ${data.charts[i].capture}'s`);
  return [
    h("h1", {}, "Linked views"),
    measureForm(data, params),
    status,
    drilled.length ? h("p", { class: "count", "data-test": "drill-down" }, `brushes answered from drill-down tables: ${drilled.join(", ")}`) : null,
    h("div", { class: "charts" }, charts.map((c) => c.box)),
  ];
}

// what the bars measure: a row count, or an aggregate of one of the source's numeric columns
function measureForm(data, params) {
  const [fn, column] = /^(\w+)\((.*)\)$/.exec(data.measure).slice(1);
  const functions = h("select", { "aria-label": "measure" }, ["count", "sum", "avg", "min", "max"].map((f) => h("option", { value: f, selected: f === fn }, f)));
  const columns = h("select", { "aria-label": "measure's column" }, h("option", { value: "*" }, "* (rows)"), data.numeric.map((c) => h("option", { value: c, selected: c === column }, c)));
  const apply = () => {
    const next = new URLSearchParams(params);
    next.delete("b");
    const m = columns.value === "*" ? "count(*)" : `${functions.value}(${columns.value})`;
    if (m === "count(*)") next.delete("m");
    else next.set("m", m);
    go(["linked"], next);
  };
  functions.addEventListener("change", () => {
    if (functions.value !== "count" && columns.value === "*" && data.numeric.length) columns.value = data.numeric[0];
    apply();
  });
  columns.addEventListener("change", apply);
  return h("div", { class: "toolbar", "data-test": "measure" }, "Bars measure ", functions, " of ", columns);
}

// rendering ------------------------------------------------------------------------------

// the views, by the address's first part: a new view (a workflow's graph, the store's
// lineage graph) is one more entry, taking the rest of the path and the parameters
const VIEWS = {
  c: { parts: 2, view: captureView },
  fd: { parts: 2, view: profileView },
  linked: { parts: 0, view: (_, params) => linkedView(params) },
};

let rendering = 0;

async function render() {
  const mine = ++rendering;
  const { parts, params } = route();
  const main = document.getElementById("main");
  showError("");
  main.setAttribute("aria-busy", "true");
  try {
    const found = VIEWS[parts[0]];
    const content = found && parts.length > found.parts ? await found.view(parts.slice(1), params) : await capturesView(params);
    if (mine === rendering) main.replaceChildren(...content.flat().filter(Boolean));
  } catch (err) {
    if (mine === rendering) showError(err.message);
  } finally {
    if (mine === rendering) main.removeAttribute("aria-busy");
  }
}

window.addEventListener("hashchange", render);
render();
