"""Debian's Chromium, headless, driven by Playwright: for the page's tests and its
benchmark. Playwright's own browsers are never downloaded (``playwright install``
needs the network); the Chromium of the machine's packages is launched instead.

>>> "--disable-background-networking" in CHROMIUM_ARGS
True
"""

from __future__ import annotations

import os
import shutil

from ..errors import SparkprovError

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    # without these Chromium keeps calling Google's hosts, which a closed network refuses
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    """The Chromium binary: ``$SPARKPROV_CHROMIUM``, else ``chromium`` on the PATH."""
    found = os.environ.get("SPARKPROV_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise SparkprovError(
            "no Chromium: install Debian's chromium package (apt-get install chromium) or set SPARKPROV_CHROMIUM "
            "to a Chromium binary; Playwright's own browsers are never downloaded"
        )
    return found


def launch(playwright):
    """A headless Chromium from ``playwright`` (``sync_playwright()``'s object)."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
