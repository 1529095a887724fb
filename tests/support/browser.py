"""Open a page in headless Chromium (Debian's package) through Playwright, offline.

Playwright drives the system Chromium given by ``executable_path``; nothing is downloaded.
"""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """Path of a Chromium binary, or None."""
    for c in CHROMIUM_CANDIDATES:
        if Path(c).is_file():
            return c
    return shutil.which("chromium")


def inspect_page(html: Path, screenshot: Path) -> dict:
    """Load ``html``; return image natural widths and console errors; save a screenshot.

    Returns:
        ``{"images": [(alt, naturalWidth), ...], "errors": [str, ...], "title": str}``.
    """
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(html.resolve().as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img", "els => els.map(e => [e.alt, e.complete ? e.naturalWidth : 0])"
            )
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
            title = page.title()
        finally:
            browser.close()
    return {"images": [tuple(i) for i in images], "errors": errors, "title": title}
