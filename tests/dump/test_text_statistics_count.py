"""The count of tensor statistics read as text (records.text_statistics_read) moves while a
dump is parsed, by as many as the parsed Params hold, and only for those: a reader scans its
records for them only when it moved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fixture_cases import FIXTURES, fixture_path
from graphboard.dump.records import parse_record, text_statistics, text_statistics_read
from graphboard.graph.builder import DumpRecords


def _tensor(**fields: Any) -> dict[str, Any]:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], **fields}


def test_every_real_dump_moves_the_count_by_its_text_statistics() -> None:
    fixture_path()  # skips without ../shared
    for path in sorted(FIXTURES.rglob("dump.json")):
        before = text_statistics_read()
        records = DumpRecords(path)
        texts = sum(len(text_statistics(p)) for ps in records.params.values() for p in ps)
        assert text_statistics_read() - before == texts, path


@pytest.mark.parametrize(
    ("record", "texts"),
    [
        ({"input_args": [_tensor(Max=1.5, Min=-1, Mean=0.0, Norm=True)]}, 0),  # numbers
        ({"input_args": [_tensor(Max="inf", Min=None, Mean=[1, 2], Norm={"a": 1})]}, 3),
        ({"output": [_tensor(Max="nan"), _tensor(Min="-inf")], "parameters": {}}, 2),
        ({"input_kwargs": {"mode": {"type": "str", "value": "tanh"}}}, 0),  # not a tensor
        ({"input_args": [[_tensor(Norm="x"), {"a": _tensor(Mean="y")}]]}, 2),  # nested
    ],
)
def test_a_record_moves_the_count_while_it_is_parsed(
    record: dict[str, Any], texts: int, tmp_path: Path
) -> None:
    before = text_statistics_read()
    params = parse_record("Module.m.M.forward.0", record, tmp_path)
    assert text_statistics_read() - before == texts
    assert sum(len(text_statistics(param)) for param in params) == texts


def test_text_statistics_are_kept_as_text() -> None:
    params = parse_record(
        "Module.m.M.forward.0", {"output": [_tensor(Max=[1, 2], Min="inf")]}, Path("dump.json")
    )
    assert text_statistics(params[0]) == [("Max", "[1, 2]"), ("Min", "inf")]
