"""What a newcomer met in the pages (issue 30), in a real browser over the fixture builds: the
table page's verdict columns in view and an errors-first order, the detail table's verdict in
its panel, the Build page's token hint naming --data-dir, the precision map's column axis not
titled "Pass" (a verdict's name). The dtype-aware filter counts are in test_dtype_rules_view."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from browser_support import Viewer

WINDOW = {"width": 1280, "height": 800}  # a laptop's window, narrower than the tests' default


def _visible_headers(page: Any, headers: str, box: str) -> list[str]:
    """The header cells whose whole width lies inside ``box``'s visible area."""
    return list(
        page.evaluate(
            "([headers, box]) => { const edge = document.querySelector(box).getBoundingClientRect();"
            " return [...document.querySelectorAll(headers)]"
            ".filter((h) => { const r = h.getBoundingClientRect();"
            " return r.left >= edge.left - 1 && r.right <= edge.right + 1; })"
            ".map((h) => h.textContent.replace(/[▲▼]/g, '').trim()); }",
            [headers, box],
        )
    )


def test_the_table_shows_the_verdict_first_and_offers_errors_first(viewer: Viewer) -> None:
    """Result, Err_message and MaxRelativeErr were off-screen right (msprobe's column order);
    there was no errors-first order (a click on Result sorted its words: pass before warning)."""
    page = viewer.page
    page.set_viewport_size(WINDOW)
    page.goto(f"{viewer.base}/table?{urlencode({'graph': 'stats', 'step': 0, 'rank': 0})}")
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#table-body .table-row:not(.loading)").first.wait_for()
    in_view = _visible_headers(page, "#table-head-row .table-th", "#table-grid")
    for column in ("NPU Name", "Result", "Err_message", "MaxRelativeErr"):
        assert column in in_view, in_view
    page.locator("#table-errors-first").click()
    page.wait_for_function("() => new URL(location).searchParams.get('sort') === 'Result'")
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#table-body .table-row:not(.loading)").first.wait_for()
    result_at = in_view.index("Result")
    results = page.evaluate(
        "(at) => [...document.querySelectorAll('#table-body .table-row:not([hidden])')]"
        ".sort((a, b) => a.dataset.index - b.dataset.index)"
        ".map((row) => row.children[at].textContent)",
        result_at,
    )
    assert results[0] == "error", results
    seen = list(dict.fromkeys(results))
    assert seen == sorted(seen, key=["error", "warning", "pass"].index), seen
    viewer.shot("table-errors-first")


def test_the_detail_tables_verdict_is_in_its_panel(viewer: Viewer) -> None:
    """The detail table ran past its panel: Result and the messages were its last columns,
    ~1,000 px right of the panel's edge, behind a scrollbar below the fold."""
    page = viewer.page
    page.set_viewport_size(WINDOW)
    viewer.open(graph="stats", step=0, rank=0, node="Functional.gelu.0.forward")
    page.locator("#details .io-table").wait_for()
    headers = "#details .io-table thead th"
    in_view = _visible_headers(page, headers, "#details .table-scroll")
    assert {"Parameter", "Side", "Result", "Messages"} <= set(in_view), in_view
    widths = page.evaluate(
        "() => { const d = document.querySelector('#details');"
        " const box = d.querySelector('.table-scroll');"
        " return [d.scrollWidth, d.clientWidth, box.getBoundingClientRect().right,"
        " d.getBoundingClientRect().right]; }"
    )
    panel_scroll, panel_width, box_right, panel_right = widths
    assert panel_scroll <= panel_width and box_right <= panel_right  # the box fits the panel
    viewer.shot("detail-verdict-in-view")


def test_the_build_pages_token_hint_names_the_data_dir(viewer: Viewer) -> None:
    page = viewer.page
    page.goto(f"{viewer.base}/build")
    page.wait_for_selector("body[data-ready=true]")
    hint = page.locator('[data-i18n="build.tokenHelp"]').inner_text()
    assert "graphboard token create --data-dir" in hint, hint


def test_the_precision_maps_column_axis_is_not_titled_pass(viewer: Viewer) -> None:
    """ "Pass" is a verdict's name; the columns are forward, backward and parameter gradients."""
    page = viewer.page
    page.goto(
        f"{viewer.base}/trends?"
        + urlencode({"graph": "ddp2", "view": "module-pass", "statistic": "level", "depth": 2})
    )
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("#trends-chart .heatmaplayer")
    title = page.locator("#trends-chart .xtitle").text_content()
    assert title == "Phase (forward, backward, parameter gradients)", title
