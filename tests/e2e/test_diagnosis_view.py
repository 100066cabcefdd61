"""The Diagnosis panel in a real browser, on a real 2-rank TP gloo run with a NaN put into one
op on rank 1 (tests/diagnose/diagnose_cases.py, graphboard's probe): the button opens the
viewer on rank 1's node and shows the ranks' states, the evidence and the config download,
as GET /api/graphs/{graph}/diagnosis gives them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import Viewer

from ci_support import live_server
from diagnose.diagnose_runs import Runs
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.settings import Settings

NODE = "Functional.gelu.0.forward"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # the same run as tests/diagnose's, made once per test session
    dump = Runs(tmp_path_factory.getbasetemp() / "diagnose-runs").ranks(2, "tp", 1)
    data = tmp_path_factory.mktemp("diagnosis-view")
    built = run_build(BuildOptions(target=dump, output_dir=data / "out", overflow_check=True))
    built.path.rename(data / "nan.vis.db")
    with live_server(Settings(data_dir=data, state_dir=tmp_path_factory.mktemp("state"))) as base:
        yield base


def test_the_panel_opens_on_the_rank_and_node_where_nan_was_born(viewer: Viewer) -> None:
    page = viewer.page
    viewer.open(graph="nan")
    page.locator("#diagnose").click()
    card = page.locator("#diagnosis-overlay .diagnosis-card")
    card.wait_for()
    served = viewer.page.request.get(f"{viewer.base}/api/graphs/nan/diagnosis").json()
    assert card.locator(".diagnosis-summary").inner_text() == served["summary"]
    ranks = [
        row.split("\t") for row in card.locator("table").first.locator("tbody tr").all_inner_texts()
    ]
    assert [(cells[0], cells[1]) for cells in ranks] == [("0", "receiver"), ("1", "born")]
    assert (
        card.locator("table").nth(1).locator("tbody tr").first.inner_text().startswith("output.0")
    )
    assert page.locator("#rank-select").input_value() == "1"  # the viewer moved onto rank 1
    link = card.locator("#diagnosis-config")
    with page.expect_download() as download:
        link.click()
    config = json.loads(Path(download.value.path()).read_text())
    assert config["rank"] == [1] and config["tensor"]["list"] == [NODE]
    viewer.shot("diagnosis")
    page.keyboard.press("Escape")
    assert page.locator("#diagnosis-overlay").is_hidden()
    viewer.selected("target").wait_for()
    assert viewer.selected("target").get_attribute("data-name") == NODE
