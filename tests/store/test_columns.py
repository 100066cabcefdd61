"""The gb_arrays columns and gb_graphs counts have one home (store/columns.py): what the
builder stores for every shared fixture is what the overlay for msprobe's files derives from
the same file's tb_* rows alone, column by column, first error and counts too."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fixture_cases import BuildFn, fixture_path
from graphboard.compare.result import Level
from graphboard.pipeline import BuildOptions, run_build
from graphboard.store import arrays
from graphboard.store.columns import first_introduced, graph_columns, graph_counts
from graphboard.store.msprobe_columns import _build as derive_overlay

# Every shared fixture as the integration tests build it: (case, build flags).
CASES: list[tuple[str, dict[str, Any]]] = [
    ("convnet-stats", {}),
    ("convnet-stats", {"overflow_check": True}),
    ("convnet-md5", {}),
    ("convnet-tensor", {}),
    ("convnet-overflow", {"overflow_check": True, "compare": False}),
    ("convnet-ddp2", {}),
    ("convnet-ddp2", {"compare": False}),
    ("layer-mapping", {}),
    ("layer-mapping", {"layer_mapping": "mapping.yaml"}),
    ("layer-mapping", {"fuzzy_match": True}),
]
# The gb_graphs fields both derive (the rest, e.g. the dump's folder, only the dump knows).
SHARED_FIELDS = (
    "node_count, micro_steps, matched, unmatched, pass_count, warning_count, error_count, "
    "first_error"
)


def _assert_overlay_derives_what_was_stored(path: Path, derived: Path) -> int:
    """Returns how many graphs have a node where a divergence starts."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as source:
        derive_overlay(source, derived)
    starting = 0
    with (
        sqlite3.connect(f"file:{path}?mode=ro", uri=True) as stored_conn,
        sqlite3.connect(derived) as derived_conn,
    ):
        query = f"SELECT graph_id, {SHARED_FIELDS} FROM gb_graphs ORDER BY graph_id"
        stored_rows = stored_conn.execute(query).fetchall()
        assert stored_rows == derived_conn.execute(query).fetchall()
        for graph_id, *_ in stored_rows:
            stored = arrays.read(stored_conn, graph_id)
            again = arrays.read(derived_conn, graph_id)
            assert stored is not None and again is not None
            assert stored.names == again.names
            for column in arrays.COLUMNS:
                assert np.array_equal(stored[column], again[column]), (graph_id, column)
            starting += bool(stored["introduced"].any())
    return starting


@pytest.mark.parametrize(("case", "flags"), CASES, ids=[f"{c}-{'-'.join(f)}" for c, f in CASES])
def test_the_overlay_derives_the_builders_columns(
    built: BuildFn, tmp_path: Path, case: str, flags: dict[str, Any]
) -> None:
    flags = dict(flags)
    compare = flags.pop("compare", True)
    if "layer_mapping" in flags:
        flags["layer_mapping"] = fixture_path(case, flags["layer_mapping"])
    path = built(case, compare=compare, **flags)
    starting = _assert_overlay_derives_what_was_stored(path, tmp_path / "derived.db")
    if compare and case.startswith("convnet"):  # the target's GELU and noisy conv
        assert starting, "the case should hold a node where a divergence starts"


def test_the_overlay_derives_the_builders_columns_for_resnet(tmp_path: Path) -> None:
    root = fixture_path("msprobe-resnet50-gpu")
    path = run_build(
        BuildOptions(
            target=root / "step1", golden=root / "step0", output_dir=tmp_path, overflow_check=True
        )
    ).path
    _assert_overlay_derives_what_was_stored(path, tmp_path / "derived.db")


def test_columns_from_plain_sequences() -> None:
    """A root with three children (post-order 0, 1, 2, root 3); child 1 matched to a node the
    other side lacks, child 2 unmatched, the root an API collection borrowing a child's index."""
    columns = graph_columns(
        parent=[3, 3, 3, arrays.NONE],
        counterpart=[0, arrays.NONE, None, 3],
        precision=[0.0, 1.0, 0.5, 1.0],
        overflow=[None, "high", "unknown label", None],
        introduced=[None, Level.ERROR, Level.WARNING, None],
    )
    assert columns["matched"].tolist() == [1, 1, 0, 1]
    assert columns["counterpart"].tolist() == [0, -1, -1, 3]
    assert columns["level"].tolist() == [0, 2, 1, 2]
    assert columns["overflow"].tolist() == [0, 2, 0, 0]
    assert columns["worst_level"][3] == 2 and columns["worst_node"][3] == 1
    assert columns["unmatched_leaves"][3] == 1
    counts = graph_counts(columns, np.array([False, False, False, True]), compared=True)
    assert (counts.matched, counts.unmatched, counts.first_error) == (3, 1, 1)
    assert counts.by_level == {Level.PASS: 1, Level.WARNING: 1, Level.ERROR: 1}
    build = graph_columns([1, arrays.NONE], None, [None, None], [None, None], [None, None])
    assert build["matched"].tolist() == [-1, -1] and build["level"].tolist() == [-1, -1]
    assert graph_counts(build, np.zeros(2, bool), compared=False).matched is None


def test_the_first_error_before_any_warning() -> None:
    assert first_introduced(np.array([0, 1, 0, 2, 2], np.int8)) == 3
    assert first_introduced(np.array([0, 1, 1], np.int8)) == 1
    assert first_introduced(np.array([0, 0], np.int8)) is None
    assert first_introduced(np.array([], np.int8)) is None
