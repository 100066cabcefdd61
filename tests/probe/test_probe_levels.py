"""Levels L0 (modules), L1 (APIs, empty construct.json) and mix (both, APIs under modules)."""

from __future__ import annotations

from pathlib import Path

import pytest
from probe_models import build, dump_one_step, load

from graphboard.errors import DumpError

API_PREFIXES = ("Tensor.", "Torch.", "Functional.", "Distributed.")


def stack_names(rank_dir: Path) -> list[str]:
    return [name for names, _ in load(rank_dir, "stack.json").values() for name in names]


def test_level_l0_records_modules_only(tmp_path: Path) -> None:
    rank_dir = dump_one_step(tmp_path, level="L0")
    construct = load(rank_dir, "construct.json")
    document = load(rank_dir, "dump.json")
    assert document["level"] == "L0"
    assert construct and all(name.startswith("Module.") for name in construct)
    assert all(name.startswith("Module.") for name in document["data"])
    assert "Module.head.0.Linear.parameters_grad.0" in document["data"]
    assert all(name.startswith("Module.") for name in stack_names(rank_dir))
    graph = build(tmp_path)
    relu = graph.nodes["Module.blocks.0.relu.ReLU.forward.1"]
    assert relu.parent is not None and relu.parent.name == "Module.blocks.0.ResidualBlock.forward.0"
    assert not relu.children
    stem = graph.nodes["Module.stem.Sequential.backward.0"]
    assert [child.name for child in stem.children] == [
        "Module.stem.2.ReLU.backward.0",
        "Module.stem.1.BatchNorm2d.backward.0",
        "Module.stem.0.Conv2d.backward.0",
    ]


def test_level_l1_records_apis_only(tmp_path: Path) -> None:
    rank_dir = dump_one_step(tmp_path, level="L1")
    assert load(rank_dir, "construct.json") == {}
    data = load(rank_dir, "dump.json")["data"]
    assert data and all(name.startswith(API_PREFIXES) for name in data)
    assert "Functional.relu.2.forward" in data and "Functional.relu.2.backward" in data
    assert all(name.startswith(API_PREFIXES) for name in stack_names(rank_dir))
    with pytest.raises(DumpError, match="L0 or mix"):  # msprobe refuses to build L1 dumps too
        build(tmp_path)


def test_level_mix_records_both(tmp_path: Path) -> None:
    rank_dir = dump_one_step(tmp_path, level="mix")
    construct = load(rank_dir, "construct.json")
    assert construct["Functional.relu.2.forward"] == "Module.blocks.0.relu.ReLU.forward.1"
    assert construct["Functional.relu.2.backward"] == "Module.blocks.0.relu.ReLU.backward.1"
    assert (
        construct["Module.blocks.0.relu.ReLU.backward.1"]
        == "Module.blocks.0.ResidualBlock.backward.0"
    )
    assert construct["Functional.cross_entropy.0.forward"] is None
    # construct.json order as msprobe writes it: an API first, then the scopes it opened
    names = list(construct)
    assert names[:3] == [
        "Functional.conv2d.0.forward",
        "Module.stem.Sequential.forward.0",
        "Module.stem.0.Conv2d.forward.0",
    ]
