"""The console's budget (ADR 0080), measured in Debian's Chromium through Playwright: the first
page load on loopback (navigation start to the load event, median of RUNS fresh pages) from a
node, side by side with the same three assets served by Python's `http.server` (a static file
server, the peer); the assets' gzip size; and how long a live cell takes to show an HTTP append
(median and worst of APPENDS). Goals: load <= 300 ms, assets <= 500 KB compressed, a live cell
current within 500 ms of the commit.

Usage: bench/console.py PONDRA_BINARY [--runs N] [--appends N]. Needs playwright in the Python
that runs it and Chromium at /usr/bin/chromium (or PONDRA_CHROMIUM).
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from playwright.sync_api import expect, sync_playwright

ASSETS = ["/", "/console/app.js", "/console/app.css"]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]


def serve(binary, folder):
    log = open(os.path.join(folder, "pondra.out"), "w+")
    process = subprocess.Popen([binary, "--dir", os.path.join(folder, "lake"), "serve", "--http-port", "0",
                                "--pg-port", "0", "--flight-port", "0"], stdout=log, stderr=subprocess.STDOUT)
    started = time.time()
    while "ready" not in open(log.name).read():
        assert process.poll() is None and time.time() - started < 30, "pondra serve did not start"
        time.sleep(0.1)
    http = next(line.split(" listening on ")[1] for line in open(log.name).read().splitlines()
                if line.startswith("http listening on "))
    return process, f"http://{http}"


def static_copy(base, folder):
    """The assets fetched from the node, written where a static server serves the same paths."""
    root = os.path.join(folder, "static")
    for path in ASSETS:
        target = os.path.join(root, path.strip("/") or "index.html")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with urllib.request.urlopen(base + path) as answer, open(target, "wb") as out:
            out.write(answer.read())
    port = 38_000 + os.getpid() % 1000
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                               cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    return process, f"http://127.0.0.1:{port}"


def load_times(browser, url, runs):
    times = []
    for _ in range(runs):
        page = browser.new_page()
        page.goto(url)
        page.wait_for_load_state("load")
        times.append(page.evaluate("() => { const t = performance.getEntriesByType('navigation')[0]; "
                                   "return t.loadEventEnd - t.startTime; }"))
        page.close()
    return statistics.median(times)


def live_lag(browser, base, appends):
    def sql(text):
        request = urllib.request.Request(f"{base}/sql", data=text.encode(), method="POST")
        urllib.request.urlopen(request).read()

    sql("CREATE TABLE events (kind VARCHAR, n INT)")
    sql("CREATE MATERIALIZED VIEW per_kind AS SELECT kind, sum(n) AS total FROM events GROUP BY kind")
    page = browser.new_page()
    page.goto(base)
    page.locator("section.cell textarea").fill("SELECT kind, total FROM per_kind ORDER BY kind")
    page.locator("section.cell textarea").press("Shift+Enter")
    expect(page.locator(".live")).to_be_visible()
    time.sleep(0.5)
    lags = []
    for i in range(appends):
        body = json.dumps({"kind": f"k{i:04}", "n": i}).encode()
        request = urllib.request.Request(f"{base}/tables/events/append", data=body, method="POST",
                                         headers={"Content-Type": "application/x-ndjson"})
        started = time.perf_counter()
        urllib.request.urlopen(request).read()
        expect(page.locator("[role=gridcell]", has_text=f"k{i:04}")).to_be_visible(timeout=30_000)
        lags.append((time.perf_counter() - started) * 1000)
    page.close()
    return statistics.median(lags), max(lags)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("pondra")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--appends", type=int, default=20)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="pondra-console-bench-")
    node, base = serve(args.pondra, folder)
    peer, peer_base = static_copy(base, folder)
    try:
        sizes = [len(urllib.request.urlopen(base + path).read()) for path in ASSETS]
        compressed = [len(gzip.compress(urllib.request.urlopen(base + path).read())) for path in ASSETS]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=os.environ.get("PONDRA_CHROMIUM", "/usr/bin/chromium"), args=FLAGS)
            ours = load_times(browser, base, args.runs)
            theirs = load_times(browser, peer_base + "/index.html", args.runs)
            median_lag, worst_lag = live_lag(browser, base, args.appends)
            browser.close()
    finally:
        node.terminate()
        peer.terminate()
    print(f"assets: {sum(sizes):,} bytes, {sum(compressed):,} gzipped (goal <= 500,000)")
    print(f"first page load, median of {args.runs}: pondra {ours:.1f} ms, static server {theirs:.1f} ms "
          f"(ratio {ours / theirs:.2f}; goal <= 300 ms)")
    print(f"live cell after an HTTP append, {args.appends} appends: median {median_lag:.0f} ms, "
          f"worst {worst_lag:.0f} ms (goal <= 500 ms)")


if __name__ == "__main__":
    main()
