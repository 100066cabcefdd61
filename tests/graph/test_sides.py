"""The one type for the two sides: its other, and msprobe's words for it."""

import pytest

from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.graph.sides import Side, spoken


def test_each_side_is_the_others_other() -> None:
    assert Side.TARGET.other is Side.GOLDEN
    assert Side.GOLDEN.other is Side.TARGET


def test_msprobe_spells_the_target_npu_and_the_golden_bench() -> None:
    assert (Side.TARGET.data_source, Side.GOLDEN.data_source) == ("NPU", "Bench")
    assert (TARGET_SIDE, GOLDEN_SIDE) == ("NPU", "Bench")
    assert Side.from_data_source("NPU") is Side.TARGET
    assert Side.from_data_source("Bench") is Side.GOLDEN


def test_a_data_source_is_only_msprobes_word() -> None:
    with pytest.raises(ValueError, match="data_source 'target': expected 'NPU' or 'Bench'"):
        Side.from_data_source("target")


@pytest.mark.parametrize(
    ("name", "side"),
    [
        ("target", Side.TARGET),
        ("golden", Side.GOLDEN),
        ("NPU", Side.TARGET),
        ("Bench", Side.GOLDEN),
    ],
)
def test_the_api_takes_our_words_and_msprobes(name: str, side: Side) -> None:
    assert Side.parse(name) is side


def test_an_unknown_side_names_the_accepted_words() -> None:
    with pytest.raises(ValueError, match="side 'npu': expected target, golden, NPU or Bench"):
        Side.parse("npu")


@pytest.mark.parametrize(
    ("name", "word"),
    [("NPU", "target"), ("Bench", "golden"), ("target", "target"), ("golden", "golden")],
)
def test_answers_spell_a_side_target_or_golden(name: str, word: str) -> None:
    assert spoken(name) == word


def test_a_data_source_no_side_has_is_spoken_as_it_is() -> None:
    assert spoken("GPU") == "GPU"
