"""Times the charting libraries of charts.mjs in Debian's Chromium, under the page's
Content-Security-Policy (sparkprov.web.guard.HEADERS). Run from web/ after
`npm run measure`: ../.venv/bin/python measure/measure.py"""

import http.server
import json
import shutil
import threading
import time
from functools import partial
from pathlib import Path

from playwright.sync_api import sync_playwright

from sparkprov.web.guard import HEADERS

HERE = Path(__file__).parent
PAGE = b'<!doctype html><meta charset="utf-8"><div id="charts"></div><script src="/dist/%s.js"></script>'


class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        for k, v in HEADERS.items():
            self.send_header(k, v)
        super().end_headers()

    def do_GET(self):
        if self.path.startswith("/page/"):
            body = PAGE % self.path.rsplit("/", 1)[1].encode()
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(body)
        else:
            super().do_GET()

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(HERE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        for lib in ("plot", "plotd3", "vega", "echarts"):
            page = browser.new_page()
            errors, refused = [], []
            page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            page.on("console", lambda m, refused=refused: m.type == "error" and refused.append(m.text[:60]))
            page.goto(f"http://127.0.0.1:{server.server_port}/page/{lib}")
            deadline = time.time() + 300
            while (result := page.evaluate("window.__result")) is None and time.time() < deadline and not errors:
                time.sleep(0.2)
            size = (HERE / "dist" / f"{lib}.js").stat().st_size
            results[lib] = {**(result or {}), "bytes": size, "errors": errors, "console_errors": sorted(set(refused))}
            page.close()
        browser.close()
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
