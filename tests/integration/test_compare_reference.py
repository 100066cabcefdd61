"""Our precision_index, overflow_level and display strings agree with msprobe 26.2's own files.

Every disagreement must be one documented in docs/differences.md; the agreement must be at
least 98% of the target-side nodes both files have.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from fixture_cases import BuildFn, fixture_path, reference_db

# (case, reference folder, build flags, step of ours -> step of msprobe's)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("convnet-stats", "reference", {}),
    ("convnet-stats", "reference-oc", {"overflow_check": True}),
    ("convnet-md5", "reference", {}),
    ("convnet-tensor", "reference", {}),
    ("convnet-overflow", "reference", {"overflow_check": True, "compare": False}),
    ("convnet-ddp2", "reference", {}),
    ("layer-mapping", "reference", {}),
    ("layer-mapping", "reference-lm", {"layer_mapping": "mapping.yaml"}),
]

# Documented differences (docs/differences.md), by (case/reference, node name):
DOCUMENTED = {
    # §"Layer mapping pairs gradients of renamed modules": msprobe leaves it grey.
    ("layer-mapping/reference-lm", "Module.blocks.0.conv_a.Conv2d.parameters_grad.0"),
}


def _rows(path: Path) -> dict[tuple[int, int, str], tuple[Any, Any]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {
            (step, rank, name): (precision, overflow)
            for step, rank, name, precision, overflow in conn.execute(
                "SELECT step, rank, node_name, precision_index, overflow_level FROM tb_nodes WHERE data_source = 'NPU'"
            )
        }


def _disagreements(ours: Path, reference: Path) -> tuple[int, list[tuple[str, Any, Any]]]:
    our_rows, their_rows = _rows(ours), _rows(reference)
    shared = our_rows.keys() & their_rows.keys()
    assert shared, "no node in common"
    differing = [
        (key[2], our_rows[key], their_rows[key])
        for key in sorted(shared)
        if our_rows[key] != their_rows[key]
    ]
    return len(shared), differing


@pytest.mark.parametrize(("case", "folder", "flags"), CASES, ids=[f"{c}/{f}" for c, f, _ in CASES])
def test_precision_and_overflow_agree_with_msprobe(
    built: BuildFn, case: str, folder: str, flags: dict[str, Any]
) -> None:
    flags = dict(flags)
    compare = flags.pop("compare", True)
    if "layer_mapping" in flags:
        flags["layer_mapping"] = fixture_path(case, flags["layer_mapping"])
    ours = built(case, compare=compare, **flags)
    shared, differing = _disagreements(ours, reference_db(case, folder))
    undocumented = [item for item in differing if (f"{case}/{folder}", item[0]) not in DOCUMENTED]
    assert not undocumented, f"undocumented differences from msprobe: {undocumented[:10]}"
    agreement = 1 - len(differing) / shared
    assert agreement >= 0.98, f"{agreement:.2%} agreement on {shared} nodes"


def test_resnet_step1_against_step0_agrees(built: BuildFn, tmp_path: Path) -> None:
    from graphboard.pipeline import BuildOptions, run_build

    root = fixture_path("msprobe-resnet50-gpu")
    ours = run_build(
        BuildOptions(
            target=root / "step1", golden=root / "step0", output_dir=tmp_path, overflow_check=True
        )
    ).path
    reference = reference_db("msprobe-resnet50-gpu", "reference-compare-step1-vs-step0")
    # msprobe records a step folder given directly as step 0; we keep its number (1).
    our_rows = {(0, rank, name): value for (_, rank, name), value in _rows(ours).items()}
    their_rows = _rows(reference)
    shared = our_rows.keys() & their_rows.keys()
    differing = [key for key in shared if our_rows[key] != their_rows[key]]
    assert len(shared) == len(their_rows)
    assert differing == []


Shown = dict[str, dict[str, str]]  # input_data / output_data: parameter -> field -> text


def _display(path: Path) -> dict[tuple[str, int, int, str], tuple[Shown, Shown]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {
            (source, step, rank, name): (json.loads(inputs or "{}"), json.loads(outputs or "{}"))
            for source, step, rank, name, inputs, outputs in conn.execute(
                "SELECT data_source, step, rank, node_name, input_data, output_data FROM tb_nodes"
            )
        }


def _same_cell(field: str, ours: str, theirs: str) -> bool:
    if field == "Err_message":  # docs/differences.md, "Messages": our own words, same verdicts
        return (ours == "[]") == (theirs == "[]")
    if field == "MaxRelativeErr" and ours != theirs:  # "Tensor metrics in float64"
        try:
            return math.isclose(float(ours), float(theirs), rel_tol=1e-6)
        except ValueError:
            return False
    return ours == theirs


def _differing_cells(
    ours: dict[tuple[str, int, int, str], tuple[Shown, Shown]],
    theirs: dict[tuple[str, int, int, str], tuple[Shown, Shown]],
    reference: str,
) -> list[tuple[str, str, str, str, str]]:
    """Cells of msprobe's nodes that differ; parameters and fields must be the same, in order."""
    shared = sorted(ours.keys() & theirs.keys())
    assert len(shared) == len(theirs)
    differing: list[tuple[str, str, str, str, str]] = []
    for key in shared:
        if (reference, key[3]) in DOCUMENTED:
            continue
        for our_side, their_side in zip(ours[key], theirs[key], strict=True):
            assert list(our_side) == list(their_side), key
            for param, our_fields in our_side.items():
                their_fields = their_side[param]
                assert list(our_fields) == list(their_fields), (key, param)
                differing.extend(
                    (key[0], param, field, text, their_fields[field])
                    for field, text in our_fields.items()
                    if not _same_cell(field, text, their_fields[field])
                )
    return differing


@pytest.mark.parametrize(("case", "folder", "flags"), CASES, ids=[f"{c}/{f}" for c, f, _ in CASES])
def test_display_strings_are_msprobes(
    built: BuildFn, case: str, folder: str, flags: dict[str, Any]
) -> None:
    """input_data / output_data, which msprobe's viewer shows: the same parameters and fields in
    the same order with the same text, on both sides."""
    flags = dict(flags)
    compare = flags.pop("compare", True)
    if "layer_mapping" in flags:
        flags["layer_mapping"] = fixture_path(case, flags["layer_mapping"])
    ours = _display(built(case, compare=compare, **flags))
    differing = _differing_cells(ours, _display(reference_db(case, folder)), f"{case}/{folder}")
    assert not differing, f"{len(differing)} cells differ, first: {differing[:5]}"


def test_resnet_display_strings_are_msprobes(tmp_path: Path) -> None:
    """The public GPU dump: step 1 against step 0, every cell as msprobe shows it."""
    from graphboard.pipeline import BuildOptions, run_build

    root = fixture_path("msprobe-resnet50-gpu")
    ours = run_build(
        BuildOptions(target=root / "step1", golden=root / "step0", output_dir=tmp_path)
    )
    # msprobe records a step folder given directly as step 0; we keep its number (1).
    our_cells = {
        (side, 0, rank, name): shown for (side, _, rank, name), shown in _display(ours.path).items()
    }
    reference = reference_db("msprobe-resnet50-gpu", "reference-compare-step1-vs-step0")
    differing = _differing_cells(our_cells, _display(reference), "msprobe-resnet50-gpu")
    assert not differing, f"{len(differing)} cells differ, first: {differing[:5]}"


def _row_order(path: Path) -> tuple[list[str], bool]:
    """The graphs in the order their rows were written, and whether each graph's rows are in
    node_order."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT graph_id, node_order FROM tb_nodes ORDER BY rowid").fetchall()
    graphs: list[str] = []
    orders: dict[str, list[int]] = {}
    for graph_id, node_order in rows:
        if not graphs or graphs[-1] != graph_id:
            graphs.append(graph_id)
        orders.setdefault(graph_id, []).append(node_order)
    return graphs, all(order == list(range(len(order))) for order in orders.values())


@pytest.mark.parametrize(("case", "folder", "flags"), CASES, ids=[f"{c}/{f}" for c, f, _ in CASES])
def test_rows_are_written_in_msprobes_order(
    built: BuildFn, case: str, folder: str, flags: dict[str, Any]
) -> None:
    """A graph's rows in node_order, each target graph before its golden, as msprobe writes
    them: a reader of tb_nodes without ORDER BY sees our files as it sees msprobe's."""
    flags = dict(flags)
    compare = flags.pop("compare", True)
    if "layer_mapping" in flags:
        flags["layer_mapping"] = fixture_path(case, flags["layer_mapping"])
    ours, in_node_order = _row_order(built(case, compare=compare, **flags))
    theirs, _ = _row_order(reference_db(case, folder))
    assert in_node_order
    assert ours == theirs
