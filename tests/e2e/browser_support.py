"""What the browser tests share: Chromium's path and flags (bench/bench_browser.py launches
the same), and a page of the viewer with helpers that wait for data rather than sleep."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "e2e"


@dataclass
class Viewer:
    """A page of the viewer, with helpers that wait for data instead of sleeping."""

    page: Any
    base: str
    errors: list[str] = field(default_factory=list)

    def open(self, **query: object) -> None:
        """Open the viewer as the URL `graphboard serve` prints does: with its write token,
        which the page keeps (and takes out of the address bar)."""
        from urllib.parse import urlencode

        from ci_support import viewer_query

        self.page.goto(f"{self.base}/?{urlencode({**query, **viewer_query(self.base)})}")
        self.page.wait_for_selector("body[data-ready=true]")

    def row(self, side: str, name: str) -> Any:
        return self.page.locator(f'#pane-{side} .tree-row[data-name="{name}"]')

    def selected(self, side: str) -> Any:
        return self.page.locator(f"#pane-{side} .tree-row.selected")

    def label_color(self, side: str, name: str) -> str:
        return str(self.row(side, name).locator(".label").evaluate("e => e.style.backgroundColor"))

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def is_expected_console_error(message: Any) -> bool:
    # plotly.js probes, at load, whether it may set a style attribute on a test element; the
    # server's CSP refuses and Chromium reports it. Nothing of ours may trip the CSP.
    location = message.location.get("url", "") if message.location else ""
    return location.endswith("/vendor/plotly.min.js")
