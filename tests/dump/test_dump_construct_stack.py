"""construct.json (plain and Megatron micro-step forms) and stack.json (legacy and grouped)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dumpmaker import fixture_path, frame
from graphboard.dump.construct import read_construct
from graphboard.dump.stack import read_stacks
from graphboard.errors import DumpError


def _write(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=1))
    return path


def test_construct_keeps_file_order_and_null_parents(tmp_path: Path) -> None:
    document = {
        "Module.b.B.forward.0": None,
        "Torch.mm.0.forward": "Module.b.B.forward.0",
        "Module.a.A.forward.0": None,
    }
    construct = read_construct(_write(tmp_path, "construct.json", document))
    assert list(construct.parents.items()) == list(document.items())
    assert construct.micro_steps is None and construct.micro_step_count is None


def test_megatron_construct_gives_parents_and_micro_steps(tmp_path: Path) -> None:
    document = {
        "megatron_micro_step_number": 2,
        "Module.m.M.forward.0": [None, 0],
        "Torch.mm.0.forward": ["Module.m.M.forward.0", 0],
        "Module.m.M.forward.1": [None, 1],
        "Torch.mm.1.forward": "Module.m.M.forward.1",  # a plain parent: micro step 0
    }
    construct = read_construct(_write(tmp_path, "construct.json", document))
    assert construct.parents == {
        "Module.m.M.forward.0": None,
        "Torch.mm.0.forward": "Module.m.M.forward.0",
        "Module.m.M.forward.1": None,
        "Torch.mm.1.forward": "Module.m.M.forward.1",
    }
    assert construct.micro_steps == {
        "Module.m.M.forward.0": 0,
        "Torch.mm.0.forward": 0,
        "Module.m.M.forward.1": 1,
    }
    assert construct.micro_step_count == 2


@pytest.mark.parametrize("value", [["Module.m.M.forward.0"], [None, 0, 1], [None, "one"]])
def test_megatron_entry_of_the_wrong_shape_names_the_record(tmp_path: Path, value: Any) -> None:
    path = _write(
        tmp_path,
        "construct.json",
        {
            "megatron_micro_step_number": 1,
            "Module.m.M.forward.0": None,
            "Torch.mm.0.forward": value,
        },
    )
    with pytest.raises(DumpError) as caught:
        read_construct(path)
    assert str(caught.value) == (
        f"{path}: record 'Torch.mm.0.forward': value {value!r};"
        " expected [parent name or null, micro step]"
    )


def test_a_list_value_outside_the_megatron_form_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "construct.json", {"Torch.mm.0.forward": [None, 0]})
    with pytest.raises(DumpError, match=r"record 'Torch.mm.0.forward': parent is a JSON list"):
        read_construct(path)


def test_a_megatron_count_that_is_not_an_integer_is_an_error(tmp_path: Path) -> None:
    document = {"megatron_micro_step_number": "2", "Module.m.M.forward.0": [None, 0]}
    path = _write(tmp_path, "construct.json", document)
    with pytest.raises(DumpError, match=r"megatron_micro_step_number is '2'; expected an integer"):
        read_construct(path)


FRAMES_A = [frame("train.py", 10, "step"), frame("model.py", 3, "forward")]
FRAMES_B = [frame("train.py", 11, "step")]


def test_legacy_stack_json_maps_names_to_frames(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "stack.json", {"Torch.mm.0.forward": FRAMES_A, "Torch.mm.1.forward": FRAMES_B}
    )
    warnings: list[str] = []
    stacks = read_stacks(path, warnings)
    assert stacks == {"Torch.mm.0.forward": tuple(FRAMES_A), "Torch.mm.1.forward": tuple(FRAMES_B)}
    assert warnings == []


def test_grouped_stack_json_expands_each_group_and_shares_equal_stacks(tmp_path: Path) -> None:
    document = {
        "0": [["Torch.mm.0.forward", "Torch.mm.1.forward"], FRAMES_A],
        "1": [["Module.a.A.forward.0"], FRAMES_B],
        "2": [["Torch.add.0.forward"], list(FRAMES_A)],
    }
    warnings: list[str] = []
    stacks = read_stacks(_write(tmp_path, "stack.json", document), warnings)
    assert stacks == {
        "Torch.mm.0.forward": tuple(FRAMES_A),
        "Torch.mm.1.forward": tuple(FRAMES_A),
        "Module.a.A.forward.0": tuple(FRAMES_B),
        "Torch.add.0.forward": tuple(FRAMES_A),
    }
    assert stacks["Torch.mm.0.forward"] is stacks["Torch.add.0.forward"]  # stored once
    assert warnings == []


def test_malformed_stack_groups_are_skipped_with_a_warning(tmp_path: Path) -> None:
    document = {
        "0": [["Torch.mm.0.forward"], FRAMES_A],
        "1": "not a group",
        "2": [["Torch.mm.1.forward"]],  # no frames
        "3": [["Torch.mm.2.forward"], [1, 2]],  # frames that are not strings
        "4": [["Torch.mm.3.forward", 5], FRAMES_B],  # a name that is not a string
    }
    path = _write(tmp_path, "stack.json", document)
    warnings: list[str] = []
    stacks = read_stacks(path, warnings)
    assert stacks == {"Torch.mm.0.forward": tuple(FRAMES_A), "Torch.mm.3.forward": tuple(FRAMES_B)}
    assert warnings == [f"{path}: 3 malformed stack entries skipped"]


def test_malformed_legacy_stack_entries_are_skipped_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, "stack.json", {"Torch.mm.0.forward": FRAMES_A, "Torch.mm.1.forward": 3})
    warnings: list[str] = []
    assert read_stacks(path, warnings) == {"Torch.mm.0.forward": tuple(FRAMES_A)}
    assert warnings == [f"{path}: 1 malformed stack entry skipped"]


def test_the_public_resnet_dump_uses_the_grouped_format() -> None:
    path = fixture_path("msprobe-resnet50-gpu", "step0", "proc2016", "stack.json")
    assert '"0"' in path.read_text()[:20]
    warnings: list[str] = []
    stacks = read_stacks(path, warnings)
    assert warnings == []
    assert stacks["Functional.conv2d.0.forward"][1].startswith(
        "File /root/miniconda3/lib/python3.12/site-packages/torch/nn/modules/conv.py, line 543"
    )
    assert len(stacks) > 400 and len(set(stacks.values())) < len(stacks)
