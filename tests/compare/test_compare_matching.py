"""Node matching: default, fuzzy (-fm) and layer mapping (-lm)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from compare_factories import graph, node

from graphboard.compare.layer_mapping import LayerMapping
from graphboard.compare.matching import MatchMode, match_graphs
from graphboard.errors import CompareError
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE, Graph


def pairs(target: Graph) -> dict[str, str | None]:
    return {
        name: (item.counterpart.name if item.counterpart else None)
        for name, item in target.nodes.items()
    }


def two_layer(prefix: str = "Module.block", api_counter: int = 0) -> Graph:
    return graph(
        TARGET_SIDE,
        node(
            f"{prefix}.Block.forward.0",
            children=[
                node(
                    f"{prefix}.fc.Linear.forward.0",
                    children=[node(f"Functional.linear.{api_counter}.forward")],
                ),
                node(f"Torch.matmul.{api_counter}.forward"),
                node(f"Torch.matmul.{api_counter + 1}.forward"),
            ],
        ),
    )


def test_default_needs_same_name_and_same_ancestors() -> None:
    target = two_layer()
    golden = graph(
        GOLDEN_SIDE,
        node(
            "Module.block.Block.forward.0",
            children=[node("Functional.linear.0.forward"), node("Torch.matmul.0.forward")],
        ),
    )
    golden.side = GOLDEN_SIDE
    stats = match_graphs(target, golden)
    result = pairs(target)
    assert result["Module.block.Block.forward.0"] == "Module.block.Block.forward.0"
    assert result["Torch.matmul.0.forward"] == "Torch.matmul.0.forward"
    # same name, but under a different parent in the golden: not paired
    assert result["Functional.linear.0.forward"] is None
    assert result["Torch.matmul.1.forward"] is None
    assert stats.target_matched == 3 and stats.target_unmatched == 3
    assert stats.golden_matched == 3 and stats.golden_unmatched == 1


def test_fuzzy_pairs_apis_by_call_order_inside_matched_modules() -> None:
    target = two_layer(api_counter=7)  # a global call counter that drifted
    golden = two_layer(api_counter=0)
    assert match_graphs(target, golden).target_unmatched == 3  # default: the three APIs stay grey
    target, golden = two_layer(api_counter=7), two_layer(api_counter=0)
    stats = match_graphs(target, golden, MatchMode.FUZZY)
    result = pairs(target)
    assert result["Torch.matmul.7.forward"] == "Torch.matmul.0.forward"
    assert result["Torch.matmul.8.forward"] == "Torch.matmul.1.forward"
    assert result["Functional.linear.7.forward"] == "Functional.linear.0.forward"
    assert stats.target_unmatched == 0


def test_layer_mapping_renames_module_paths(tmp_path: Path) -> None:
    mapping_file = tmp_path / "mapping.yaml"
    mapping_file.write_text("TopLayer:\n  classifier: head\nBlock:\n  proj: fc\n")
    target = graph(
        TARGET_SIDE,
        node(
            "Module.classifier.Block.forward.0",
            children=[
                node(
                    "Module.classifier.proj.Dense.forward.0",
                    children=[node("Functional.linear.0.forward")],
                )
            ],
        ),
    )
    golden = graph(
        GOLDEN_SIDE,
        node(
            "Module.head.Block.forward.0",
            children=[
                node(
                    "Module.head.fc.Linear.forward.0",
                    children=[node("Functional.linear.0.forward")],
                )
            ],
        ),
    )
    stats = match_graphs(target, golden, MatchMode.LAYER_MAPPING, LayerMapping.load(mapping_file))
    result = pairs(target)
    assert result["Module.classifier.Block.forward.0"] == "Module.head.Block.forward.0"
    # renamed attribute and a renamed class (Dense vs Linear) still pair by mapped path
    assert result["Module.classifier.proj.Dense.forward.0"] == "Module.head.fc.Linear.forward.0"
    assert result["Functional.linear.0.forward"] == "Functional.linear.0.forward"
    assert stats.target_unmatched == 0


def test_layer_mapping_without_file_matches_paths_across_class_names() -> None:
    target = graph(TARGET_SIDE, node("Module.net.Dense.forward.0"))
    golden = graph(GOLDEN_SIDE, node("Module.net.Linear.forward.0"))
    match_graphs(target, golden, MatchMode.LAYER_MAPPING, LayerMapping())
    assert pairs(target)["Module.net.Dense.forward.0"] == "Module.net.Linear.forward.0"


def test_pairs_are_one_to_one_and_both_ways() -> None:
    target, golden = two_layer(), two_layer()
    match_graphs(target, golden, MatchMode.FUZZY)
    for name, item in target.nodes.items():
        assert item.counterpart is not None and item.counterpart.counterpart is item, name
    assert len({id(item.counterpart) for item in target.nodes.values()}) == len(target.nodes)


def test_bad_layer_mapping_files(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("TopLayer: [a, b\n")
    with pytest.raises(CompareError, match=r"broken.yaml: invalid YAML at line"):
        LayerMapping.load(broken)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("TopLayer: [a, b]\n")
    with pytest.raises(CompareError, match=re.escape("expected {target attr: golden attr}")):
        LayerMapping.load(wrong)
    with pytest.raises(CompareError, match="cannot read"):
        LayerMapping.load(tmp_path / "absent.yaml")
