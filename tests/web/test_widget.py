"""The linked views as a notebook widget: the kernel's side (LinkedWidget) answers a
brush message with the counts the page's server gives, and the widget's script,
rendered in Chromium with a model standing in for the notebook's, sends a drag's groups
and draws the counts it is given."""

from __future__ import annotations

import http.server
import json
import threading
from functools import partial

from sparkprov.web.app import STATIC
from sparkprov.web.data import StoreView
from sparkprov.web.widget import LinkedWidget

from .test_linked_page import _brushed, _drag_over_bars

PAGE = """<!doctype html><meta charset="utf-8"><div id="w"></div>
<script id="charts" type="application/json">{charts}</script>
<script type="module">
import widget from "/widget.js";
const state = {{ charts: JSON.parse(document.getElementById("charts").textContent), counts: [], status: "ready" }};
const listeners = {{}};
const sent = [];
const model = {{
  get: (k) => state[k],
  set: (k, v) => {{ state[k] = v; }},
  on: (event, f) => (listeners[event] ??= []).push(f),
  off: () => {{}},
  send: (message) => sent.push(message),
  save_changes: () => {{}},
}};
window.kernel = {{ sent, set: (k, v) => {{ state[k] = v; (listeners["change:" + k] || []).forEach((f) => f()); }} }};
widget.render({{ model, el: document.getElementById("w") }});
</script>"""


def test_the_kernel_answers_a_brush_as_the_page_does(ui_session):
    root = str(ui_session.store.root)
    widget = LinkedWidget(root, ["totals", "buckets"])
    assert [c["capture"] for c in widget.charts] == ["totals", "buckets"] and widget.counts == []
    widget._on_message(widget, {"type": "brush", "chart": 1, "groups": [2, 3]}, [])
    assert widget.counts == StoreView(root).brush(["totals", "buckets"], 1, [2, 3])["counts"]
    assert widget.status == "40 of 200 rows brushed in buckets"
    widget._on_message(widget, {"type": "brush", "chart": 1, "groups": [99]}, [])
    assert widget.status.startswith("error: chart 'buckets' has groups 0 to 9")
    widget._on_message(widget, {"type": "brush", "chart": 1, "groups": []}, [])
    assert widget.counts == [] and widget.status.startswith("200 rows of")


def test_the_widgets_script_sends_a_drag_and_draws_the_answer(ui_session, browser, tmp_path):
    widget = LinkedWidget(str(ui_session.store.root), ["totals", "buckets"])
    (tmp_path / "widget.js").write_bytes((STATIC / "widget.js").read_bytes())
    charts = json.dumps(widget.charts).replace("</", "<\\/")  # values hold markup
    (tmp_path / "index.html").write_text(PAGE.format(charts=charts))
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    try:
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
        page.wait_for_selector('[data-test="chart-buckets"] svg')
        _drag_over_bars(page, "buckets", 4, 6)
        page.wait_for_function("window.kernel.sent.length > 0")
        (message,) = page.evaluate("window.kernel.sent")
        assert message == {"type": "brush", "chart": 1, "groups": [4, 5, 6]}
        counts = widget.brush(message["chart"], message["groups"])  # the kernel's answer
        page.evaluate("([counts, status]) => window.kernel.set('counts', counts)", [counts, widget.status])
        shown = _brushed(page, "totals")
        assert [int(v.split(" of ")[0]) for v in shown.values()] == counts[0]
        assert errors == []
    finally:
        page.close()
        server.shutdown()
