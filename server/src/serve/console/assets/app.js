// The Pondra console (ADR 0080): notebooks of SQL, Markdown and Python cells. No framework:
// cells are plain elements, the grid renders only the rows in view, charts draw on a canvas.
"use strict";

const ROW_HEIGHT = 24;
const PAGE_ROWS = 200;
const CHART_ROWS = 2000;
const KINDS = ["sql", "markdown", "python"];

const $ = (selector, root = document) => root.querySelector(selector);
const element = (tag, props = {}, children = []) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "role" || key.startsWith("aria-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of [].concat(children)) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
};
const status = (text) => { $("#status").textContent = text; };

// Requests, with the tab's token when the node asks for one.

function token() { return sessionStorage.getItem("pondra-token") || ""; }

async function askToken() {
  const dialog = $("#token-dialog");
  $("#token-input").value = "";
  dialog.showModal();
  await new Promise((done) => dialog.addEventListener("close", done, { once: true }));
  sessionStorage.setItem("pondra-token", $("#token-input").value);
}

async function api(method, path, body) {
  for (let attempt = 0; attempt < 3; attempt++) {
    const headers = {};
    if (token()) headers.Authorization = `Bearer ${token()}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    if (response.status === 401) { await askToken(); continue; }
    const text = await response.text();
    let answer;
    try { answer = JSON.parse(text); } catch { answer = { error: text || response.statusText }; }
    if (!response.ok) throw new Error(answer.error || response.statusText);
    return answer;
  }
  throw new Error("no token was accepted");
}

// Answers: pages of rows fetched as the grid shows them, or rows held in the page.

class Answer {
  constructor(columns, total, firstRows, id) {
    this.columns = columns;
    this.total = total;
    this.id = id;
    this.pages = new Map([[0, firstRows.slice(0, PAGE_ROWS)]]);
    for (let start = PAGE_ROWS; start < firstRows.length; start += PAGE_ROWS) {
      this.pages.set(start / PAGE_ROWS, firstRows.slice(start, start + PAGE_ROWS));
    }
    this.loading = new Map();
  }
  row(index) {
    const page = this.pages.get(Math.floor(index / PAGE_ROWS));
    return page ? page[index % PAGE_ROWS] : undefined;
  }
  async load(pageNumber) {
    if (this.pages.has(pageNumber) || this.id === undefined) return;
    if (!this.loading.has(pageNumber)) {
      const offset = pageNumber * PAGE_ROWS;
      const fetched = api("GET", `/console/api/result/${this.id}?offset=${offset}&limit=${PAGE_ROWS}`)
        .then((page) => this.pages.set(pageNumber, page.rows))
        .finally(() => this.loading.delete(pageNumber));
      this.loading.set(pageNumber, fetched);
    }
    await this.loading.get(pageNumber);
  }
  async rows(count) {
    const wanted = Math.min(count, this.total);
    for (let page = 0; page * PAGE_ROWS < wanted; page++) await this.load(page);
    const rows = [];
    for (let i = 0; i < wanted; i++) rows.push(this.row(i));
    return rows;
  }
}

// The grid: a header, a spacer as tall as every row, and the rows in view as text.

function renderGrid(answer) {
  const grid = element("div", { className: "grid", tabIndex: 0 });
  grid.setAttribute("role", "grid");
  grid.setAttribute("aria-rowcount", String(answer.total + 1));
  const head = element("div", { className: "head" });
  head.setAttribute("role", "row");
  head.append(element("div", { className: "c n" }, "#"));
  for (const column of answer.columns) {
    const cell = element("div", { className: "c", title: `${column.name} ${column.type}` }, [
      column.name, element("small", {}, column.type)]);
    cell.setAttribute("role", "columnheader");
    head.append(cell);
  }
  const spacer = element("div", { className: "spacer" });
  spacer.style.height = `${answer.total * ROW_HEIGHT}px`;
  grid.append(head, spacer);
  let drawn = "";
  const draw = () => {
    const first = Math.max(0, Math.floor(grid.scrollTop / ROW_HEIGHT) - 10);
    const last = Math.min(answer.total, first + Math.ceil(grid.clientHeight / ROW_HEIGHT) + 20);
    const missing = new Set();
    for (let i = first; i < last; i++) if (!answer.row(i)) missing.add(Math.floor(i / PAGE_ROWS));
    const key = `${first}:${last}:${missing.size}`;
    if (key !== drawn) {
      drawn = key;
      spacer.replaceChildren();
      for (let i = first; i < last; i++) {
        const values = answer.row(i);
        const row = element("div", { className: "row" });
        row.setAttribute("role", "row");
        row.setAttribute("aria-rowindex", String(i + 2));
        row.style.top = `${i * ROW_HEIGHT}px`;
        row.append(element("div", { className: "c n" }, String(i + 1)));
        for (let c = 0; c < answer.columns.length; c++) {
          const value = values ? values[c] : "…";
          const cell = element("div", { className: value === null ? "c null" : "c" },
            value === null ? "NULL" : String(value));
          cell.setAttribute("role", "gridcell");
          row.append(cell);
        }
        spacer.append(row);
      }
    }
    for (const page of missing) answer.load(page).then(draw, (e) => status(e.message));
  };
  grid.addEventListener("scroll", () => requestAnimationFrame(draw));
  requestAnimationFrame(draw);
  grid.redraw = () => { drawn = ""; draw(); };
  return grid;
}

// Charts: bar, line or scatter of one column against another, over the first rows.

function renderChart(answer) {
  const box = element("div");
  const pick = (label, options, chosen) => {
    const select = element("select", { "aria-label": label });
    options.forEach((option, i) => select.append(element("option", { value: i, selected: i === chosen }, option)));
    return select;
  };
  const names = answer.columns.map((c) => c.name);
  const numeric = answer.columns.findIndex((c) => /INT|DOUBLE|REAL|FLOAT|DECIMAL|NUMERIC|int|float/.test(c.type));
  const kind = pick("Chart kind", ["bar", "line", "scatter"], 0);
  const x = pick("X column", names, 0);
  const y = pick("Y column", names, numeric >= 0 ? numeric : Math.min(1, names.length - 1));
  const canvas = element("canvas", { className: "chart" });
  canvas.setAttribute("role", "img");
  const controls = element("div", { className: "chart-controls" },
    [element("label", {}, ["Kind ", kind]), element("label", {}, ["X ", x]), element("label", {}, ["Y ", y])]);
  box.append(controls, canvas);
  const draw = async () => {
    const rows = await answer.rows(CHART_ROWS);
    const points = rows.map((r) => [r[x.value], Number(r[y.value])]).filter((p) => Number.isFinite(p[1]));
    canvas.setAttribute("aria-label", `${kind.selectedOptions[0].text} chart of ${names[y.value]} by ${names[x.value]}, ${points.length} points`);
    drawChart(canvas, kind.selectedOptions[0].text, points);
  };
  for (const select of [kind, x, y]) select.addEventListener("change", draw);
  requestAnimationFrame(draw);
  return box;
}

function drawChart(canvas, kind, points) {
  const scale = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 600, height = canvas.clientHeight || 320;
  canvas.width = width * scale; canvas.height = height * scale;
  const g = canvas.getContext("2d");
  g.scale(scale, scale);
  g.fillStyle = "#fff"; g.fillRect(0, 0, width, height);
  if (points.length === 0) { g.fillStyle = "#5b6474"; g.fillText("no numeric values to draw", 12, 20); return; }
  const pad = 36;
  const ys = points.map((p) => p[1]);
  const low = Math.min(0, ...ys), high = Math.max(...ys, low + 1);
  const numericX = points.every((p) => p[0] !== null && Number.isFinite(Number(p[0])));
  const xs = numericX && kind !== "bar" ? points.map((p) => Number(p[0])) : points.map((_, i) => i);
  const xLow = Math.min(...xs), xHigh = Math.max(...xs, xLow + 1);
  const px = (v) => pad + ((v - xLow) / (xHigh - xLow || 1)) * (width - 2 * pad);
  const py = (v) => height - pad - ((v - low) / (high - low)) * (height - 2 * pad);
  g.strokeStyle = "#b9c0cc"; g.beginPath(); g.moveTo(pad, pad / 2); g.lineTo(pad, height - pad);
  g.lineTo(width - pad / 2, height - pad); g.stroke();
  g.fillStyle = "#5b6474"; g.font = "11px sans-serif";
  g.fillText(String(high), 2, pad); g.fillText(String(low), 2, height - pad);
  g.fillStyle = "#5b8def"; g.strokeStyle = "#5b8def";
  if (kind === "bar") {
    const w = Math.max(1, (width - 2 * pad) / points.length - 2);
    points.forEach((p, i) => { const top = py(Math.max(p[1], 0)); g.fillRect(pad + i * (w + 2) + 1, top, w, Math.abs(py(p[1]) - py(0)) || 1); });
  } else if (kind === "line") {
    g.beginPath(); points.forEach((p, i) => (i ? g.lineTo : g.moveTo).call(g, px(xs[i]), py(p[1]))); g.stroke();
  } else {
    points.forEach((p, i) => { g.beginPath(); g.arc(px(xs[i]), py(p[1]), 3, 0, 2 * Math.PI); g.fill(); });
  }
}

// Markdown, rendered safely: text is escaped before the few forms are applied.

function markdown(source) {
  const escape = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const inline = (t) => escape(t)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/\*([^*]+)\*/g, "<em>$1</em>")
    .replace(/\[([^\]]+)\]\((https?:[^)\s]+)\)/g, '<a href="$2" rel="noopener">$1</a>');
  const out = [];
  let list = null, code = null;
  for (const line of source.split("\n")) {
    if (code !== null) {
      if (line.startsWith("```")) { out.push(`<pre><code>${escape(code.join("\n"))}</code></pre>`); code = null; } else code.push(line);
      continue;
    }
    if (line.startsWith("```")) { code = []; continue; }
    const item = line.match(/^\s*[-*]\s+(.*)/);
    if (item) { if (!list) { list = []; } list.push(`<li>${inline(item[1])}</li>`); continue; }
    if (list) { out.push(`<ul>${list.join("")}</ul>`); list = null; }
    const heading = line.match(/^(#{1,6})\s+(.*)/);
    if (heading) out.push(`<h${heading[1].length}>${inline(heading[2])}</h${heading[1].length}>`);
    else if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  if (list) out.push(`<ul>${list.join("")}</ul>`);
  if (code) out.push(`<pre><code>${escape(code.join("\n"))}</code></pre>`);
  return out.join("\n");
}

// Cells.

const cells = [];
const history = [];

function addCell(kind = "sql", source = "", after = null) {
  const cell = { kind, live: null };
  const root = element("section", { className: "cell" });
  root.setAttribute("aria-label", `${kind} cell`);
  const select = element("select", { className: "kind", "aria-label": "Cell kind" });
  for (const k of KINDS) select.append(element("option", { value: k, selected: k === kind }, k === "sql" ? "SQL" : k[0].toUpperCase() + k.slice(1)));
  const editor = element("textarea", { value: source, spellcheck: false, "aria-label": "Cell source" });
  const output = element("div", { className: "output" });
  const button = (label, title, action) => {
    const b = element("button", { title }, label);
    b.setAttribute("aria-label", title);
    b.addEventListener("click", action);
    return b;
  };
  const bar = element("div", { className: "bar" }, [select,
    button("▶ Run", "Run cell", () => runCell(cell)),
    element("span", { className: "spacer" }),
    button("↑", "Move up", () => moveCell(cell, -1)),
    button("↓", "Move down", () => moveCell(cell, 1)),
    button("+", "Add cell below", () => addCell(cell.kind, "", cell).editor.focus()),
    button("✕", "Delete cell", () => deleteCell(cell))]);
  root.append(bar, editor, output);
  Object.assign(cell, { root, editor, output, select });
  select.addEventListener("change", () => { cell.kind = select.value; root.setAttribute("aria-label", `${cell.kind} cell`); });
  editor.addEventListener("input", () => fit(editor));
  editor.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.shiftKey) {
      event.preventDefault();
      runCell(cell).then(() => {
        const next = cells[cells.indexOf(cell) + 1] || addCell(cell.kind, "", cell);
        next.editor.focus();
      });
    }
  });
  const at = after ? cells.indexOf(after) + 1 : cells.length;
  cells.splice(at, 0, cell);
  const container = $("#cells");
  container.insertBefore(root, container.children[at] || null);
  fit(editor);
  return cell;
}

function fit(editor) {
  editor.style.height = "auto";
  editor.style.height = `${Math.max(editor.scrollHeight, 48)}px`;
}

function moveCell(cell, by) {
  const from = cells.indexOf(cell), to = from + by;
  if (to < 0 || to >= cells.length) return;
  cells.splice(from, 1);
  cells.splice(to, 0, cell);
  const container = $("#cells");
  container.insertBefore(cell.root, container.children[to + (by > 0 ? 1 : 0)] || null);
}

function deleteCell(cell) {
  stopLive(cell);
  cells.splice(cells.indexOf(cell), 1);
  cell.root.remove();
}

function stopLive(cell) {
  if (cell.live) { cell.live.close(); cell.live = null; }
}

async function runCell(cell) {
  stopLive(cell);
  cell.root.classList.add("running");
  cell.output.replaceChildren(element("div", { className: "meta" }, "running…"));
  try {
    const source = cell.editor.value;
    if (cell.kind === "markdown") {
      const rendered = element("div", { className: "markdown" });
      rendered.innerHTML = markdown(source);
      cell.output.replaceChildren(rendered);
    } else if (cell.kind === "python") {
      const outcome = await api("POST", "/console/api/python", { code: source });
      showPython(cell, outcome);
    } else {
      remember(source);
      const answer = await api("POST", "/console/api/query", { sql: source });
      showQuery(cell, answer);
    }
  } catch (error) {
    cell.output.replaceChildren(element("div", { className: "error", role: "alert" }, error.message));
  } finally {
    cell.root.classList.remove("running");
  }
}

function showRows(cell, answer, meta) {
  let grid = renderGrid(answer);
  const shown = element("div");
  shown.append(grid);
  const toggle = element("button", {}, "Chart");
  toggle.addEventListener("click", () => {
    const charting = toggle.textContent === "Chart";
    toggle.textContent = charting ? "Grid" : "Chart";
    shown.replaceChildren(charting ? renderChart(answer) : (grid = renderGrid(answer)));
  });
  cell.output.replaceChildren(element("div", { className: "meta" }, [...meta, toggle]), shown);
}

function showQuery(cell, answer) {
  if (answer.tag !== undefined) {
    cell.output.replaceChildren(element("div", { className: "meta" }, `${answer.tag} · ${answer.elapsed_ms} ms`));
    return;
  }
  const rows = new Answer(answer.page.columns, answer.total, answer.page.rows, answer.id);
  const count = element("span", {}, `${answer.total} rows`);
  const meta = [count, element("span", {}, `${answer.elapsed_ms} ms`)];
  if (answer.live) meta.push(element("span", { className: "live" }, "live"));
  showRows(cell, rows, meta);
  if (answer.live) follow(cell, answer.sql, count);
}

function follow(cell, sql, count) {
  const query = new URLSearchParams({ sql });
  if (token()) query.set("token", token());
  const source = new EventSource(`/console/api/live?${query}`);
  cell.live = source;
  source.addEventListener("result", (event) => {
    const update = JSON.parse(event.data);
    const rows = new Answer(update.page.columns, update.page.rows.length, update.page.rows);
    count.textContent = `${update.total} rows`;
    const meta = [count, element("span", { className: "live" }, "live")];
    showRows(cell, rows, meta);
  });
  source.addEventListener("error", (event) => {
    if (event.data) {
      stopLive(cell);
      cell.output.append(element("div", { className: "error", role: "alert" }, JSON.parse(event.data).error));
    }
  });
}

function showPython(cell, outcome) {
  const parts = [];
  if (outcome.stdout) parts.push(element("pre", { className: "stdout" }, outcome.stdout));
  if (outcome.error) parts.push(element("div", { className: "error", role: "alert" }, outcome.error));
  cell.output.replaceChildren(...parts);
  if (outcome.frame) {
    const frame = outcome.frame;
    const rows = new Answer(frame.columns, frame.rows.length, frame.rows);
    const meta = [element("span", {}, `${frame.total} rows`), element("span", {}, `${outcome.elapsed_ms} ms`)];
    const before = [...cell.output.children];
    showRows(cell, rows, meta);
    cell.output.prepend(...before);
  } else if (!parts.length) {
    cell.output.replaceChildren(element("div", { className: "meta" }, `done · ${outcome.elapsed_ms} ms`));
  }
}

function remember(sql) {
  history.unshift(sql);
  history.length = Math.min(history.length, 50);
  $("#history").replaceChildren(...history.map((text) => {
    const item = element("li", { title: "Add as a new cell" }, text.length > 80 ? `${text.slice(0, 80)}…` : text);
    item.addEventListener("click", () => addCell("sql", text));
    return item;
  }));
}

// Notebooks: saved in the lake, listed, opened; exported and imported as Jupyter's.

function notebookDocument() {
  return { cells: cells.map((c) => ({ kind: c.kind, source: c.editor.value })) };
}

function load(notebook) {
  for (const cell of [...cells]) deleteCell(cell);
  for (const cell of notebook.cells || []) {
    const made = addCell(KINDS.includes(cell.kind) ? cell.kind : "sql", cell.source || "");
    if (made.kind === "markdown") runCell(made);
  }
  if (!cells.length) addCell();
}

async function listNotebooks() {
  const { notebooks } = await api("GET", "/console/api/notebooks");
  $("#notebooks").replaceChildren(...notebooks.map((name) => {
    const item = element("li", {}, name);
    item.addEventListener("click", () => openNotebook(name));
    return item;
  }));
}

async function openNotebook(name) {
  const notebook = await api("GET", `/console/api/notebooks/${encodeURIComponent(name)}`);
  $("#notebook-name").value = name;
  location.hash = `nb=${encodeURIComponent(name)}`;
  load(notebook);
  status(`opened ${name}`);
}

async function saveNotebook() {
  const name = $("#notebook-name").value.trim();
  await api("PUT", `/console/api/notebooks/${encodeURIComponent(name)}`, notebookDocument());
  location.hash = `nb=${encodeURIComponent(name)}`;
  status(`saved ${name}`);
  await listNotebooks();
}

function exportIpynb() {
  const source = (text) => text.split(/(?<=\n)/);
  const notebook = {
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: "python3", display_name: "Python 3", language: "python" }, language_info: { name: "python" } },
    cells: cells.map((c) => c.kind === "markdown"
      ? { cell_type: "markdown", metadata: {}, source: source(c.editor.value) }
      : { cell_type: "code", metadata: { pondra: { kind: c.kind } }, execution_count: null, outputs: [],
          source: source(c.kind === "sql" ? `%%sql\n${c.editor.value}` : c.editor.value) }),
  };
  const link = element("a", {
    href: URL.createObjectURL(new Blob([JSON.stringify(notebook, null, 1)], { type: "application/json" })),
    download: `${$("#notebook-name").value || "notebook"}.ipynb`,
  });
  link.click();
  URL.revokeObjectURL(link.href);
}

async function importIpynb(file) {
  const notebook = JSON.parse(await file.text());
  const text = (s) => (Array.isArray(s) ? s.join("") : s || "");
  load({
    cells: (notebook.cells || []).map((c) => {
      const body = text(c.source);
      if (c.cell_type === "markdown") return { kind: "markdown", source: body };
      const kind = (c.metadata && c.metadata.pondra && c.metadata.pondra.kind) || (body.startsWith("%%sql") ? "sql" : "python");
      return { kind, source: kind === "sql" ? body.replace(/^%%sql[^\n]*\n?/, "") : body };
    }),
  });
  $("#notebook-name").value = file.name.replace(/\.ipynb$/, "");
  status(`imported ${file.name}`);
}

// Schemas: tables and views with their columns.

async function listSchemas() {
  const sql = "SELECT c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type " +
    "FROM information_schema.columns c JOIN information_schema.tables t " +
    "ON c.table_schema = t.table_schema AND c.table_name = t.table_name " +
    "WHERE c.table_schema NOT IN ('information_schema', 'pg_catalog') " +
    "ORDER BY 1, 2, c.ordinal_position";
  const answer = await api("POST", "/console/api/query", { sql });
  const rows = await new Answer(answer.page.columns, answer.total, answer.page.rows, answer.id).rows(100000);
  const schemas = new Map();
  for (const [schema, table, type, column, dataType] of rows) {
    if (!schemas.has(schema)) schemas.set(schema, new Map());
    const tables = schemas.get(schema);
    if (!tables.has(table)) tables.set(table, { type, columns: [] });
    tables.get(table).columns.push(`${column} ${dataType}`);
  }
  const tree = [];
  for (const [schema, tables] of schemas) {
    const block = element("details", { open: true }, element("summary", {}, schema));
    for (const [table, { type, columns }] of tables) {
      const kind = /VIEW/i.test(type) ? "view" : "table";
      const entry = element("details", {}, element("summary", { title: kind }, `${table} (${kind})`));
      entry.append(element("div", { className: "columns" }, columns.map((c) => element("div", {}, c))));
      block.append(entry);
    }
    tree.push(block);
  }
  $("#schemas").replaceChildren(...tree);
}

// Start.

function start() {
  for (const button of document.querySelectorAll("[data-add]")) {
    button.addEventListener("click", () => addCell(button.dataset.add).editor.focus());
  }
  $("#new-notebook").addEventListener("click", () => { $("#notebook-name").value = "untitled"; location.hash = ""; load({ cells: [] }); });
  $("#save-notebook").addEventListener("click", () => saveNotebook().catch((e) => status(e.message)));
  $("#run-all").addEventListener("click", async () => { for (const cell of [...cells]) await runCell(cell); });
  $("#export-ipynb").addEventListener("click", exportIpynb);
  $("#import-ipynb").addEventListener("change", (e) => e.target.files[0] && importIpynb(e.target.files[0]).catch((err) => status(err.message)));
  $("#refresh-schemas").addEventListener("click", () => listSchemas().catch((e) => status(e.message)));
  const named = location.hash.match(/nb=([^&]+)/);
  if (named) openNotebook(decodeURIComponent(named[1])).catch((e) => { status(e.message); addCell(); });
  else addCell();
  listNotebooks().then(listSchemas).catch((e) => status(e.message));
}

start();
