"""The Trends page in a real browser over graphboard's compare of convnet-ddp2 (2 ranks x 2
steps): the heatmap is drawn, hovering a cell names its value and node, clicking it opens the
viewer on that node, step and rank; the precision map; the viewer links here."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from browser_support import Viewer


def _open_trends(viewer: Viewer, **query: object) -> Any:
    page = viewer.page
    page.goto(f"{viewer.base}/trends?{urlencode(query)}")
    page.wait_for_selector("body[data-ready=true]")
    page.wait_for_selector("#trends-chart .heatmaplayer")
    return page


def _row_labels(page: Any) -> list[str]:
    """The y tick labels from the top of the chart down."""
    return list(
        page.evaluate(
            "() => [...document.querySelectorAll('#trends-chart .ytick text')]"
            ".map((t) => [t.getBoundingClientRect().top, t.textContent])"
            ".sort((a, b) => a[0] - b[0]).map((pair) => pair[1])"
        )
    )


def _cell(page: Any, row: int, col: int) -> tuple[float, float]:
    center = page.evaluate("([r, c]) => globalThis.graphboardTrends.cellCenter(r, c)", [row, col])
    assert center is not None
    return float(center["x"]), float(center["y"])


def test_heatmap_hover_and_click_open_the_node(viewer: Viewer) -> None:
    page = _open_trends(viewer, graph="ddp2", view="module-step", statistic="error", rank=1)
    assert _row_labels(page) == [
        "stem.Sequential",
        "blocks.0.ResidualBlock",
        "pool.AdaptiveAvgPool2d",
        "head.Sequential",
    ]
    assert page.locator("#trends-chart .xtick text").all_text_contents() == ["0", "1"]
    assert "4 rows × 2 columns" in page.locator("#trends-status").inner_text()
    viewer.shot("trends-module-step")

    x, y = _cell(page, 1, 1)  # blocks.0 at step 1
    page.mouse.move(x, y)
    hover = page.locator("#trends-chart .hoverlayer .hovertext")
    hover.wait_for()
    text = str(hover.text_content())
    assert "Module.blocks.0.ResidualBlock.forward.0" in text
    assert "%" in text  # the error, as a percentage
    viewer.shot("trends-hover")

    page.mouse.click(x, y)
    page.wait_for_url("**/?graph=ddp2*")
    page.wait_for_selector("body[data-ready=true]")
    node = "Module.blocks.0.ResidualBlock.forward.0"
    viewer.selected("target").and_(page.locator(f'[data-name="{node}"]')).wait_for()
    assert page.evaluate("new URL(location).searchParams.get('step')") == "1"
    assert page.evaluate("new URL(location).searchParams.get('rank')") == "1"
    viewer.shot("trends-clicked-node")


def test_precision_map_and_its_chinese_labels(viewer: Viewer) -> None:
    page = _open_trends(viewer, graph="ddp2", view="module-pass", statistic="level", depth=2)
    assert page.locator("#trends-chart .xtick text").all_text_contents() == [
        "Forward (outputs)",
        "Backward (gradients)",
        "Parameter gradients",
    ]
    assert "head.3.Linear" in _row_labels(page)
    assert page.locator("#trends-pass").is_hidden()  # the passes are the columns
    viewer.shot("trends-precision-map")
    page.click("#lang-toggle")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#trends-chart .xtick text')]"
        ".some((t) => t.textContent === '参数梯度')"
    )
    assert page.locator("#trends-view option:checked").inner_text() == "精度图（模块 × 阶段）"
    viewer.shot("trends-precision-map-zh")
    page.click("#lang-toggle")


def test_rank_by_step_of_a_chosen_module(viewer: Viewer) -> None:
    page = _open_trends(viewer, graph="ddp2", view="rank-step", statistic="norm", side="diff")
    assert page.locator("#trends-module").is_visible()
    page.select_option("#trends-module", "Module.head.Sequential")
    page.wait_for_function(
        "() => new URL(location).searchParams.get('module') === 'Module.head.Sequential'"
    )
    page.wait_for_selector("body[data-ready=true]")
    assert _row_labels(page) == ["0", "1"]
    x, y = _cell(page, 0, 1)
    page.mouse.move(x, y)
    assert "Module.head.Sequential.forward.0" in str(
        page.locator("#trends-chart .hovertext").text_content()
    )
    viewer.shot("trends-rank-step")


def test_the_viewer_links_to_the_trends_of_its_file(viewer: Viewer) -> None:
    viewer.open(graph="ddp2", step=1, rank=0)
    link = viewer.page.locator("#trends-link")
    viewer.page.wait_for_function(
        "() => document.querySelector('#trends-link').href.includes('graph=ddp2')"
    )
    assert "step=1" in str(link.get_attribute("href"))


def test_a_compare_opens_on_the_excess_over_the_noise_band(viewer: Viewer) -> None:
    """graphboard's compare holds dtype-aware verdicts: Trends opens on the excess (issue 29),
    and the address says so. convnet-stats' two injected changes are the only forward modules
    beyond their band: the block whose conv weight has 1e-3 noise, and the head, whose tanh
    GELU only its argument tells apart (infinitely beyond: no number measures it)."""
    page = _open_trends(viewer, graph="stats", view="module-pass")
    assert page.locator("#trends-statistic").input_value() == "excess"
    assert "statistic=excess" in page.evaluate("location.search")
    answer = page.evaluate(
        "() => fetch('/api/graphs/stats/heatmap?rows=module&cols=pass&statistic=excess')"
        ".then((response) => response.json())"
    )
    forward = {
        row: float(values[0])
        for row, values in zip(answer["rows"], answer["values"], strict=True)
        if values[0] is not None
    }
    beyond = {row: value for row, value in forward.items() if value > 1}
    assert sorted(beyond) == ["Module.blocks.0.ResidualBlock", "Module.head.Sequential"], forward
    assert beyond["Module.head.Sequential"] == float("inf")
