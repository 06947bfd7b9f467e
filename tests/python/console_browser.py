"""The console (ADR 0080) in a real browser: Playwright for Python driving Debian's Chromium
against two nodes of one lake. A SQL cell's grid, a Markdown cell rendered, a Python cell that
appends rows, a live cell over a materialized view following an HTTP append, the chart view
drawn, a notebook saved and reopened after a reload and on the second node, Jupyter export and
import, a million-row answer scrolled to its last row, and a node with tokens asking for one.

Usage: console_browser.py HTTP_ADDRESS SECOND_HTTP_ADDRESS TOKEN_HTTP_ADDRESS (a node whose
read token is `reader`). Exits non-zero on the first
mismatch. Timings are printed, not judged: the bounds below only keep a broken page from
hanging the run.
"""

import json
import os
import sys
import time
import urllib.request

from playwright.sync_api import expect, sync_playwright

first, second, guarded = (f"http://{address}" for address in sys.argv[1:4])
CHROMIUM = os.environ.get("PONDRA_CHROMIUM", "/usr/bin/chromium")
PATIENCE_MS = 30_000
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]


def cell(page, index):
    return page.locator("section.cell").nth(index)


def run(page, index, source, kind="sql"):
    """Types `source` into cell `index` (added when missing) and runs it with Shift+Enter."""
    while page.locator("section.cell").count() <= index:
        page.click(f"[data-add={kind}]")
    target = cell(page, index)
    target.locator("select.kind").select_option(kind)
    editor = target.locator("textarea")
    editor.fill(source)
    editor.press("Shift+Enter")
    expect(target).not_to_have_class("cell running", timeout=PATIENCE_MS)
    expect(target.locator(".output .meta, .output .error, .output .markdown").first).to_be_visible(timeout=PATIENCE_MS)
    return target


def grid_texts(target):
    return target.locator("[role=gridcell]").all_inner_texts()


def http_append(table, rows):
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    request = urllib.request.Request(f"{first}/tables/{table}/append", data=body, method="POST",
                                     headers={"Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read())["rows"] == len(rows)


def sql_cells_and_markdown(page):
    started = time.perf_counter()
    page.goto(first)
    expect(cell(page, 0)).to_be_visible(timeout=PATIENCE_MS)
    print(f"console loaded in {(time.perf_counter() - started) * 1000:.0f} ms")
    run(page, 0, "CREATE TABLE events (kind VARCHAR, n INT); INSERT INTO events VALUES ('a', 1), ('b', 2)")
    target = run(page, 1, "SELECT kind, n FROM events ORDER BY n")
    expect(target.locator("[role=gridcell]", has_text="b")).to_be_visible()
    assert grid_texts(target) == ["a", "1", "b", "2"], grid_texts(target)
    headers = target.locator("[role=columnheader]").all_inner_texts()
    assert headers[0].startswith("kind") and "VARCHAR" in headers[0], headers
    expect(target.locator(".meta")).to_contain_text("2 rows")
    error = run(page, 2, "SELECT missing FROM events")
    expect(error.locator(".error")).to_contain_text("missing")
    print("a SQL cell's grid, its columns and types; an error in place")
    target = run(page, 3, "# Daily report\n\nRows of **events**, by `kind`.\n\n- one\n- two", kind="markdown")
    expect(target.locator(".markdown h1")).to_have_text("Daily report")
    expect(target.locator(".markdown strong")).to_have_text("events")
    assert target.locator(".markdown li").count() == 2
    print("a Markdown cell renders")


def python_cell(page):
    code = ("con.sql(\"INSERT INTO events VALUES ('py', 3)\")\n"
            "print('appended from Python')\n"
            "con.sql('SELECT kind, n FROM events ORDER BY n').df()")
    target = run(page, 4, code, kind="python")
    expect(target.locator(".stdout")).to_contain_text("appended from Python", timeout=PATIENCE_MS)
    expect(target.locator("[role=gridcell]", has_text="py")).to_be_visible()
    assert grid_texts(target)[-2:] == ["py", "3"], grid_texts(target)
    failing = run(page, 5, "raise ValueError('a cell that fails')", kind="python")
    expect(failing.locator(".error")).to_contain_text("ValueError: a cell that fails")
    print("a Python cell appends rows and shows its frame; its error in place")


def live_cell(page):
    run(page, 6, "CREATE MATERIALIZED VIEW per_kind AS SELECT kind, sum(n) AS total FROM events GROUP BY kind")
    target = run(page, 7, "SELECT kind, total FROM per_kind ORDER BY kind")
    expect(target.locator(".live")).to_be_visible()
    expect(target.locator("[role=gridcell]", has_text="py")).to_be_visible()
    time.sleep(0.5)  # the live stream is open before the append
    started = time.perf_counter()
    http_append("events", [{"kind": "zz", "n": 40}])
    expect(target.locator("[role=gridcell]", has_text="zz")).to_be_visible(timeout=PATIENCE_MS)
    print(f"a live cell showed an HTTP append {(time.perf_counter() - started) * 1000:.0f} ms after it")
    expect(target.locator(".meta")).to_contain_text("4 rows")
    subscribed = run(page, 8, "SUBSCRIBE TO per_kind")
    expect(subscribed.locator(".live")).to_be_visible()
    http_append("events", [{"kind": "yy", "n": 50}])
    expect(subscribed.locator("[role=gridcell]", has_text="yy")).to_be_visible(timeout=PATIENCE_MS)
    expect(target.locator("[role=gridcell]", has_text="yy")).to_be_visible(timeout=PATIENCE_MS)
    # Shift+Enter on the last cell added an empty one after it.
    expect(page.locator("section.cell")).to_have_count(10)
    cell(page, 8).get_by_role("button", name="Delete cell").click()
    expect(page.locator("section.cell")).to_have_count(9)
    print("a SUBSCRIBE cell follows its view as well")


def side_panel_and_cells(page):
    page.click("#refresh-schemas")
    events = page.locator("#schemas details details", has_text="events (table)")
    expect(events).to_be_visible(timeout=PATIENCE_MS)
    events.locator("summary").click()
    expect(events.locator(".columns")).to_contain_text("kind")
    expect(page.locator("#schemas summary", has_text="per_kind (view)")).to_be_visible()
    expect(page.locator("#history li").first).to_contain_text("SUBSCRIBE TO per_kind")
    # Moving a cell down and back, and a new cell added below one, then deleted.
    first_source = cell(page, 0).locator("textarea").input_value()
    cell(page, 0).get_by_role("button", name="Move down").click()
    assert cell(page, 1).locator("textarea").input_value() == first_source
    cell(page, 1).get_by_role("button", name="Move up").click()
    assert cell(page, 0).locator("textarea").input_value() == first_source
    cell(page, 0).get_by_role("button", name="Add cell below").click()
    expect(page.locator("section.cell")).to_have_count(10)
    assert cell(page, 1).locator("textarea").input_value() == ""
    cell(page, 1).get_by_role("button", name="Delete cell").click()
    expect(page.locator("section.cell")).to_have_count(9)
    print("the side panel lists tables, views, columns and the history; cells move, add and delete")


def chart_view(page):
    target = cell(page, 1)
    target.get_by_role("button", name="Chart").click()
    canvas = target.locator("canvas.chart")
    expect(canvas).to_be_visible()
    page.wait_for_timeout(300)
    painted = canvas.evaluate("""c => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let blue = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === 0x5b && d[i + 1] === 0x8d && d[i + 2] === 0xef) blue++;
        return blue;
    }""")
    assert painted > 100, f"{painted} pixels of bars"
    shot = canvas.screenshot()
    assert len(shot) > 1000, len(shot)
    print(f"the chart view draws ({painted} pixels of bars)")


def notebooks(page, browser):
    page.fill("#notebook-name", "daily")
    page.click("#save-notebook")
    expect(page.locator("#status")).to_have_text("saved daily", timeout=PATIENCE_MS)
    sources = [cell(page, i).locator("textarea").input_value() for i in range(page.locator("section.cell").count())]
    with page.expect_download() as download:
        page.click("#export-ipynb")
    exported = json.loads(open(download.value.path()).read())
    assert exported["nbformat"] == 4 and len(exported["cells"]) == len(sources), exported
    assert "".join(exported["cells"][1]["source"]).startswith("%%sql"), exported["cells"][1]
    page.reload()
    expect(page.locator("section.cell")).to_have_count(len(sources), timeout=PATIENCE_MS)
    assert page.locator("section.cell textarea").nth(1).input_value() == sources[1]
    expect(cell(page, 3).locator(".markdown h1")).to_have_text("Daily report")
    page.click("#run-all")
    expect(cell(page, 1).locator("[role=gridcell]", has_text="b")).to_be_visible(timeout=PATIENCE_MS)
    expect(cell(page, 7).locator(".live")).to_be_visible(timeout=PATIENCE_MS)
    # The second node follows the leader's commits: the notebook opens there too.
    other = browser.new_page()
    started = time.time()
    while True:
        other.goto(f"{second}/#nb=daily")
        try:
            expect(other.locator("section.cell")).to_have_count(len(sources), timeout=2000)
            break
        except AssertionError:
            assert time.time() - started < PATIENCE_MS / 1000, "the notebook never reached the second node"
    assert other.locator("section.cell textarea").nth(0).input_value() == sources[0]
    expect(other.locator("#notebooks li", has_text="daily")).to_be_visible()
    # Imported back, the exported notebook holds the same cells.
    other.click("#new-notebook")
    expect(other.locator("section.cell")).to_have_count(1)
    other.set_input_files("#import-ipynb", download.value.path())
    expect(other.locator("section.cell")).to_have_count(len(sources))
    imported = [other.locator("section.cell textarea").nth(i).input_value() for i in range(len(sources))]
    assert imported == sources, (imported, sources)
    other.close()
    print("a saved notebook reopens after a reload and on the second node; .ipynb out and back")


def million_rows(page):
    page.click("#new-notebook")
    target = run(page, 0, "SELECT i, i * 2 AS twice FROM range(1000000) t(i)")
    expect(target.locator(".meta")).to_contain_text("1000000 rows")
    grid = target.locator(".grid")
    started = time.perf_counter()
    grid.evaluate("g => { g.scrollTop = g.scrollHeight; }")
    last = target.locator("[role=row][aria-rowindex='1000001']")
    # The row is drawn at once, its values once their page has come.
    expect(last.locator("[role=gridcell]").first).to_have_text("999999", timeout=PATIENCE_MS)
    assert last.locator("[role=gridcell]").all_inner_texts() == ["999999", "1999998"]
    grid.evaluate("g => { g.scrollTop = g.scrollHeight / 2; }")
    middle = target.locator("[role=row][aria-rowindex='500002'] [role=gridcell]").first
    expect(middle).to_have_text("500000", timeout=PATIENCE_MS)
    rendered = target.locator("[role=row]").count()
    assert rendered < 200, f"{rendered} rows in the page: the grid renders those in view"
    print(f"a million-row answer scrolled to its last row in {(time.perf_counter() - started) * 1000:.0f} ms")


def tokens(browser):
    page = browser.new_page()
    page.goto(guarded)
    dialog = page.locator("#token-dialog")
    expect(dialog).to_be_visible(timeout=PATIENCE_MS)
    page.fill("#token-input", "reader")
    page.click("#token-dialog button")
    target = run(page, 0, "SELECT 41 + 1 AS answer")
    assert grid_texts(target) == ["42"], grid_texts(target)
    # The token is kept for the tab: a reload asks no more.
    page.reload()
    target = run(page, 0, "SELECT 7 AS seven")
    assert grid_texts(target) == ["7"], grid_texts(target)
    expect(dialog).not_to_be_visible()
    page.click("#save-notebook")
    expect(page.locator("#status")).to_contain_text("permission denied", timeout=PATIENCE_MS)
    page.close()
    print("a node with tokens asks for one, keeps it for the tab, and a read token cannot save")


with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    page = browser.new_page(accept_downloads=True)
    page.on("pageerror", lambda error: print(f"page error: {error}"))
    sql_cells_and_markdown(page)
    python_cell(page)
    live_cell(page)
    side_panel_and_cells(page)
    chart_view(page)
    notebooks(page, browser)
    million_rows(page)
    tokens(browser)
    browser.close()
print("console: ok")
