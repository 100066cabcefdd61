"""The detail panel's per-rank statistics of a merged node, in a real browser, on a merged
build of the real TP2 dump (tests/parallel: Megatron-style GPT, msprobe's torchrun and
dumper): each rank's Max / Min / Mean / Norm under the merged value, as the API serves them;
two ranks depart from their midpoint alike, so neither is marked; an unmerged node has none."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from browser_support import Viewer

from ci_support import live_server
from graphboard.merge.flags import parallel_options
from graphboard.pipeline import BuildOptions, run_build
from graphboard.server.settings import Settings
from parallel.parallel_dumps import LAYOUTS, make_dump

FC1 = "Module.decoder.layers.1.mlp.linear_fc1.ColumnParallelLinear.forward.0"
UNMERGED = "Module.decoder.final_layernorm.LayerNorm.forward.0"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """This module's own server (conftest's ``viewer`` opens pages on it), over the build."""
    layout = LAYOUTS["tp2"]
    dump = make_dump(layout, "mix", tmp_path_factory.mktemp("rank-stats-dump"))
    data = tmp_path_factory.mktemp("rank-stats-view")
    parallel = parallel_options(
        rank_size=[layout.ranks], tp=[layout.tp], pp=[layout.pp], compare=False
    )
    built = run_build(BuildOptions(target=dump.root, output_dir=data / "out", parallel=parallel))
    built.path.rename(data / "tp2.vis.db")
    state = tmp_path_factory.mktemp("rank-stats-state")
    with live_server(Settings(data_dir=data, state_dir=state)) as base:
        yield base


def _served(viewer: Viewer, name: str) -> dict[str, Any]:
    response = viewer.page.request.get(
        f"{viewer.base}/api/graphs/tp2/node",
        params={"name": name, "side": "target", "step": 0, "rank": 0},
    )
    assert response.ok, response.text()
    return {row["key"]: row["target"] for row in response.json()["rows"] if row["target"]}


def test_the_detail_panel_shows_each_ranks_statistics(viewer: Viewer) -> None:
    page = viewer.page
    viewer.open(graph="tp2", node=FC1, side="target")
    section = page.locator("#details .rank-stats")
    section.wait_for()
    served = _served(viewer, FC1)
    merged = {key: fields for key, fields in served.items() if fields["ranks"]}
    assert "parameters.weight" in merged
    bodies = section.locator("tbody")
    assert bodies.count() == len(merged)
    weight = section.locator("tbody", has_text="parameters.weight")
    shown = [row.split("\t") for row in weight.locator("tr").all_inner_texts()]
    assert [cells[1 if index == 0 else 0].strip() for index, cells in enumerate(shown)] == [
        "merged",
        "0",
        "1",
    ]
    for cells, rank in zip(shown[1:], merged["parameters.weight"]["ranks"], strict=True):
        numbers = [float(cell) for cell in cells[1:5]]
        expected = [rank[field] for field in ("max", "min", "mean", "norm")]
        assert numbers == pytest.approx(expected, rel=1e-5)
        assert cells[5].strip().endswith("%")
    assert section.locator("tr.rank-outlier").count() == 0  # two ranks: neither stands out
    viewer.shot("rank-stats")
    # a link written before the sides were renamed, in msprobe's word: it still opens
    page.goto(f"{viewer.base}/?graph=tp2&node={UNMERGED}&side=NPU")
    page.wait_for_selector("body[data-ready=true]")
    page.locator("#details .io-table").first.wait_for()
    assert not any(fields["ranks"] for fields in _served(viewer, UNMERGED).values())
    assert page.locator("#details .rank-stats").count() == 0
