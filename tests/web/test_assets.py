"""The page's vendored assets: built from the sources in the repository, and loading
nothing from anywhere but the server (the page works offline)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from sparkprov.web.app import STATIC

SOURCES = Path(__file__).resolve().parents[2] / "web" / "src"


def test_the_vendored_assets_were_built_from_the_sources_in_the_repository():
    built = json.loads((STATIC / "BUILD.json").read_text())["sources"]
    here = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(SOURCES.iterdir())}
    assert built == here, "web/src changed since the assets were built: run `npm run build` in web/"


def test_the_page_loads_nothing_from_elsewhere():
    page = (STATIC / "index.html").read_text()
    references = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert references and all(r.startswith(("/static/", "#", "data:")) for r in references), references
    for asset in ("app.js", "app.css", "widget.js", "charts.css"):
        text = (STATIC / asset).read_text()
        # XML namespaces (SVG's, XHTML's) are names, not addresses a page loads
        elsewhere = set(re.findall(r"https?://[^\"' )]*", text)) - {
            "http://www.w3.org/1999/xhtml",
            "http://www.w3.org/1999/xlink",
            "http://www.w3.org/2000/svg",
            "http://www.w3.org/2000/xmlns/",
            "http://www.w3.org/XML/1998/namespace",
        }
        assert not elsewhere, f"{asset} names addresses elsewhere: {elsewhere}"


def test_the_page_puts_values_in_as_text_only():
    # d3's .html() and the like would read a value as markup: the page's own code uses none
    for name in ("app.js", "charts.js", "widget.js"):
        source = (SOURCES / name).read_text()
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|\.html\(|document\.write", source), name
