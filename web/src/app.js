// sparkprov's page: the captures in a store, one capture's plan and rows, and traces
// through its lineage. Built into src/sparkprov/web/static/app.js (npm run build).
//
// Every value from the store reaches the page as text (textContent, never innerHTML),
// and every view lives in the address's fragment, so it can be reloaded and shared.

const PAGE = 50;

// DOM ------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

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

const count = (n, what) => `${n.toLocaleString("en")} ${what}${n === 1 ? "" : "s"}`;

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

function pager(offset, total, onPage) {
  const last = Math.min(offset + PAGE, total);
  return h(
    "div",
    { class: "pager" },
    h("button", { disabled: offset === 0, onclick: () => onPage(Math.max(0, offset - PAGE)) }, "‹ previous"),
    h("span", { class: "range" }, total ? `rows ${offset + 1}–${last} of ${total.toLocaleString("en")}` : "no rows"),
    h("button", { disabled: last >= total, onclick: () => onPage(offset + PAGE) }, "next ›"),
  );
}

// the captures ------------------------------------------------------------------------

async function capturesView(params) {
  const like = params.get("like") || "";
  const filter = h("input", { type: "search", placeholder: "filter by name", value: like, "aria-label": "filter captures by name" });
  let timer;
  filter.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => go([], new URLSearchParams({ like: filter.value })), 250);
  });
  if (like) setTimeout(() => filter.focus(), 0); // typing goes on in the redrawn box
  const data = await api("/api/captures" + (like ? "?like=" + enc(like) : ""));
  const rows = data.captures.map((c) => {
    const link = h("a", { href: `#/c/${enc(c.name)}/${c.version}` }, c.name);
    const status = c.failed ? h("span", { class: "bad" }, "failed: " + c.failed.reason) : c.damaged ? h("span", { class: "bad" }, "damaged: " + c.damaged) : "ok";
    return h(
      "tr",
      { "data-name": c.name },
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
  const header = ["name", "version", "created", "strategy", "seconds", "rows", "size", "sources", "status"].map((t) => h("th", {}, t));
  return [
    h("h1", {}, "Captures"),
    h("div", { class: "toolbar" }, filter, h("span", { class: "count" }, count(data.captures.length, "capture"))),
    data.captures.length
      ? h("table", { "data-test": "captures" }, h("thead", {}, h("tr", {}, header)), h("tbody", {}, rows))
      : h("p", { class: "empty" }, like ? `no capture's name contains “${like}”` : "no captures in this store yet"),
  ];
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
    h("ul", { class: "sources" }, cap.sources.map((s) => h("li", {}, h("b", {}, s.name), `: ${s.format}, ${count(s.files, "file")} (${s.kind})`))),
  );
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
    selCount.textContent = selected.size ? `${count(selected.size, "row")} selected` : "";
  };
  const backwardButton = h("button", { disabled: selected.size === 0, onclick: () => update({ trace: "sel" }), "data-test": "trace-selected" }, "Trace selected rows backward");
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
  const trace = traced ? await backwardSection(base, traced === "where" ? { where: where || "true" } : { rids: [...selected] }, params, update) : null;
  return [
    h("h1", {}, cap.name, " ", h("span", { class: "versions" }, versions)),
    h("p", { class: "meta" }, [cap.created, cap.strategy && `strategy ${cap.strategy}`, cap.rows != null && count(cap.rows, "output row"), cap.bytes != null && bytes(cap.bytes)].filter(Boolean).join(" · ")),
    planSection(cap),
    output,
    trace,
  ];
}

async function backwardSection(base, start, params, update) {
  if (start.rids && start.rids.length === 0) return null;
  const first = await api(`${base}/backward`, { ...start, limit: PAGE });
  const section = h("section", { "data-test": "backward" }, h("h2", {}, "Backward: ", count(first.matched, "output row"), " traced to the sources"));
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
      const onToggle = (rid, on) => {
        if (on) picked.add(rid);
        else picked.delete(rid);
        button.disabled = picked.size === 0;
      };
      const table = rowsTable(ans, { test: "backward-" + source, selected: picked, onToggle });
      const pages = pager(ans.offset, ans.count, async (o) => {
        try {
          draw((await api(`${base}/backward`, { ...start, source, offset: o, limit: PAGE })).sources[source]);
        } catch (err) {
          showError(err.message);
        }
      });
      box.replaceChildren(h("h3", {}, source, ": ", count(ans.count, "row")), table, h("div", { class: "toolbar" }, pages, button));
    };
    draw(answer);
    section.append(box);
  }
  if (forwardSource && forwardRids.size) section.append(await forwardSection(base, forwardSource, [...forwardRids]));
  return section;
}

async function forwardSection(base, source, rids) {
  const box = h("section", { "data-test": "forward" });
  const draw = async (offset) => {
    const ans = await api(`${base}/forward`, { source, rids, offset, limit: PAGE });
    box.replaceChildren(
      h("h2", {}, "Forward: ", count(ans.matched, `row`), ` of ${source} contributed to `, count(ans.count, "output row")),
      rowsTable(ans, { test: "forward" }),
      pager(ans.offset, ans.count, (o) => draw(o).catch((e) => showError(e.message))),
    );
  };
  await draw(0);
  return box;
}

// rendering ------------------------------------------------------------------------------

let rendering = 0;

async function render() {
  const mine = ++rendering;
  const { parts, params } = route();
  const main = document.getElementById("main");
  showError("");
  main.setAttribute("aria-busy", "true");
  try {
    const content = parts[0] === "c" && parts.length >= 3 ? await captureView(parts.slice(1), params) : await capturesView(params);
    if (mine === rendering) main.replaceChildren(...content.filter(Boolean));
  } catch (err) {
    if (mine === rendering) showError(err.message);
  } finally {
    if (mine === rendering) main.removeAttribute("aria-busy");
  }
}

window.addEventListener("hashchange", render);
render();
