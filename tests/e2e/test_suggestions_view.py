"""The Match tab's Suggestions list in a real browser, on the layer-mapping compare built
without -lm (its renamed classifier grey): proposals with confidence and reason, reject one
(gone, and not proposed again), accept one, accept all above, accepted pairs matched by hand;
and on a fused-qkv model against a split one, the fused nodes listed apart."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import Viewer

from ci_support import live_server
from graphboard.server.settings import Settings

GREY_FILL = "rgb(199, 199, 199)"
HEAD = ("Module.classifier.Sequential.forward.0", "Module.head.Sequential.forward.0")
FIRST = ("Module.classifier.0.Linear.forward.0", "Module.head.0.Linear.forward.0")
LAST = ("Module.classifier.3.Linear.forward.0", "Module.head.3.Linear.forward.0")


@pytest.fixture(scope="module")
def server(built: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This module's own server (the conftest's viewer opens it): accepting writes to the
    file, which the other browser tests must find as built."""
    from graphboard.pipeline import BuildOptions, run_build
    from suggest.fused_models import dump

    data = tmp_path_factory.mktemp("suggest-data")
    shutil.copyfile(built("layer-mapping", compare=True), data / "lm.vis.db")
    work = tmp_path_factory.mktemp("suggest-fused")
    target, golden = dump(work / "target", fused=True), dump(work / "golden", fused=False)
    fused = run_build(BuildOptions(target=target, golden=golden, output_dir=work / "out")).path
    shutil.copyfile(fused, data / "fused.vis.db")
    state = tmp_path_factory.mktemp("suggest-state")
    with live_server(Settings(data_dir=data, state_dir=state)) as base:
        yield base


def _item(viewer: Viewer, pair: tuple[str, str]) -> Any:
    return viewer.page.locator(
        f'#suggestion-list li[data-target="{pair[0]}"][data-golden="{pair[1]}"]'
    )


def _label_is(viewer: Viewer, name: str, *, grey: bool) -> None:
    viewer.page.wait_for_function(
        "([n, grey, fill]) => { const e = document.querySelector("
        "`#pane-target .tree-row[data-name='${n}'] .label`);"
        " const got = e && e.style.backgroundColor;"
        " return Boolean(got) && (got === fill) === grey; }",
        arg=[name, grey, GREY_FILL],
    )


def test_suggestions_accept_reject_and_accept_all(viewer: Viewer) -> None:
    page = viewer.page
    # msprobe's rules: they rescore a pair the user makes, so an accepted node takes a
    # precision colour; the dtype-aware default withholds its verdict (plain) until a rebuild
    viewer.open(graph="lm", node=FIRST[0], rules="msprobe")
    _label_is(viewer, FIRST[0], grey=True)
    page.locator("#tab-match").click()
    head = _item(viewer, HEAD)
    head.wait_for()
    assert head.locator(".suggestion-confidence").inner_text().endswith("%")
    assert "under" in head.locator(".suggestion-reason").inner_text()
    assert "of" in page.locator("#suggest-count").inner_text()
    viewer.shot("20-suggestions")

    _item(viewer, LAST).locator(".suggestion-reject").click()
    _item(viewer, LAST).wait_for(state="detached")

    _item(viewer, FIRST).locator(".suggestion-accept").click()
    _label_is(viewer, FIRST[0], grey=False)
    assert viewer.row("target", FIRST[0]).locator(".mark.manual").count() == 1
    _item(viewer, FIRST).wait_for(state="detached")  # matched: no longer proposed

    page.locator("#suggest-min").fill("0.6")
    page.locator("#suggest-accept-all").click()
    _label_is(viewer, HEAD[0], grey=False)
    assert viewer.row("target", HEAD[0]).locator(".mark.manual").count() == 1
    page.locator("#panel-match:not([aria-busy])").wait_for()
    _label_is(viewer, LAST[0], grey=True)  # rejected, so neither proposed nor accepted
    assert _item(viewer, LAST).count() == 0
    viewer.shot("21-suggestions-accepted")


def test_fused_nodes_are_listed_apart(viewer: Viewer) -> None:
    viewer.open(graph="fused")
    page = viewer.page
    page.locator("#tab-match").click()
    fused = page.locator("#fused-list li", has_text="Module.attention.qkv.Linear.forward.0").first
    fused.wait_for()
    assert "Module.attention.q.Linear.forward.0" in fused.inner_text()
    assert "does the work of 3 nodes" in fused.inner_text()
    assert fused.locator("button").count() == 0  # flagged, never accepted as a pair
