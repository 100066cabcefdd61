"""The page keeps the token the URL `graphboard serve` printed brings, takes it out of the
address bar, and writes with it; a browser without it cannot write (issue 30, point 3)."""

from __future__ import annotations

from typing import Any

from browser_support import Viewer

from ci_support import VIEWER_TOKENS


def test_the_page_keeps_the_urls_token_and_hides_it(viewer: Viewer) -> None:
    viewer.open(graph="mapping")
    page = viewer.page
    assert "token=" not in page.url and "graph=mapping" in page.url
    kept = page.evaluate("() => localStorage.getItem('graphboard.token')")
    assert kept and kept == VIEWER_TOKENS[viewer.base]


def test_a_page_without_the_token_cannot_write(browser: Any, server: str) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(f"{server}/?graph=mapping")
        page.wait_for_selector("body[data-ready=true]")
        status = page.evaluate(
            "async () => (await fetch('/api/graphs/mapping/matches/undo?step=0&rank=0', "
            "{method: 'POST'})).status"
        )
        assert status == 401
    finally:
        context.close()
