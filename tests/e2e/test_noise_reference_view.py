"""The detail panel's third side in a real browser: a compare built with a noise reference
(-nr; a bf16 GPT whose layer-1 MLP output is 5% off against fp32, the bf16 run without the
fault as the reference) shows, under each parameter's target and golden rows, the reference's
row (R) with its statistics and d target / d reference / band."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser_support import Viewer

from ci_support import live_server
from dtype_dumps import Dumps, dtype_dumps
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.settings import Settings

__all__ = ["dtype_dumps"]

MLP = "Module.blocks.1.mlp."


@pytest.fixture(scope="module")
def server(dtype_dumps: Dumps, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("noise-reference-view")
    run_build(
        BuildOptions(
            target=dtype_dumps.dump("graphboard", "gpt", 2, "scaled"),
            golden=dtype_dumps.dump("graphboard", "gpt", 2, "fp32"),
            noise_reference=dtype_dumps.dump("graphboard", "gpt", 2, "bf16"),
            output_dir=data,
            output_name="three.vis.db",
        )
    )
    state = tmp_path_factory.mktemp("noise-reference-state")
    with live_server(Settings(data_dir=data, state_dir=state)) as base:
        yield base


def test_the_detail_panel_shows_the_reference_beside_target_and_golden(viewer: Viewer) -> None:
    page = viewer.page
    viewer.open(graph="three", rules="dtype-aware")
    page.locator("#first-error").click()
    selected = page.locator("#pane-target .tree-row.selected")
    selected.wait_for()
    assert str(selected.get_attribute("data-name")).startswith(MLP)
    rows = page.locator("#details .io-table tr.reference-row")
    rows.first.wait_for()
    texts = rows.all_inner_texts()
    # one R row per tensor parameter: input, weight, bias, output
    assert len(texts) >= 4
    assert all(
        text.split()[0] == "R" and "d target" in text and "d reference" in text for text in texts
    )
    assert any("bfloat16" in text for text in texts)
    working = page.locator("#details .io-table td.reference-working.error")
    assert working.count() >= 1  # the 5%-off weight, beyond what the reference explains
    viewer.shot("noise-reference-detail")
