"""Layout discovery: which (step, rank) folders a -tp/-gp path holds, whatever level it names."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dumpmaker import RankDump, fixture_path, tiny_model, write_dump_root
from graphboard.dump.layout import LayoutKind, discover
from graphboard.errors import LayoutError
from graphboard.pipeline import BuildOptions, run_build


def _rank(path: Path, dump: RankDump | None = None) -> Path:
    return (dump or tiny_model()).write(path)


def _found(path: Path) -> list[tuple[int, int, str]]:
    return [(item.step, item.rank, item.path.name) for item in discover(path).ranks]


def test_a_rank_folder_given_directly_takes_its_numbers_from_the_folder_names(
    tmp_path: Path,
) -> None:
    rank = _rank(tmp_path / "step3" / "rank10")
    layout = discover(rank)
    assert layout.kind is LayoutKind.RANK
    assert _found(rank) == [(3, 10, "rank10")]
    assert layout.warnings == []


@pytest.mark.parametrize(
    ("parent", "folder", "expected"),
    [
        ("step2", "rank", (2, 0)),  # a bare rank folder is rank 0
        ("step7", "proc4242", (7, 0)),  # a non-distributed run's proc<pid> is rank 0
        ("run", "rank5", (0, 5)),  # no stepN above: step 0
        ("anything", "my_dump", (0, 0)),  # neither name says: msprobe's 0 and 0
    ],
)
def test_a_rank_folder_with_other_names_gets_step_and_rank_zero_where_names_say_nothing(
    tmp_path: Path, parent: str, folder: str, expected: tuple[int, int]
) -> None:
    rank = _rank(tmp_path / parent / folder)
    assert _found(rank) == [(*expected, folder)]


def test_a_step_folder_of_rank_folders_takes_its_step_from_its_name(tmp_path: Path) -> None:
    for rank in (0, 1):
        _rank(tmp_path / "step5" / f"rank{rank}")
    layout = discover(tmp_path / "step5")
    assert layout.kind is LayoutKind.RANKS
    assert _found(tmp_path / "step5") == [(5, 0, "rank0"), (5, 1, "rank1")]
    assert layout.steps == [5] and layout.rank_ids == [0, 1]


def test_a_dump_root_of_step_folders_lists_every_step_and_rank(tmp_path: Path) -> None:
    write_dump_root(tmp_path, {(s, r): tiny_model() for s in (0, 1) for r in (0, 1)})
    layout = discover(tmp_path)
    assert layout.kind is LayoutKind.STEPS
    assert _found(tmp_path) == [
        (0, 0, "rank0"),
        (0, 1, "rank1"),
        (1, 0, "rank0"),
        (1, 1, "rank1"),
    ]
    assert layout.get(1, 1) is not None and layout.get(1, 1).path == tmp_path / "step1" / "rank1"  # type: ignore[union-attr]
    assert layout.get(2, 0) is None


def test_step_and_rank_numbers_sort_numerically_not_as_text(tmp_path: Path) -> None:
    write_dump_root(tmp_path, {(s, r): tiny_model() for s in (10, 2, 1) for r in (10, 2, 0)})
    found = _found(tmp_path)
    assert [(step, rank) for step, rank, _ in found] == [
        (step, rank) for step in (1, 2, 10) for rank in (0, 2, 10)
    ]
    assert [name for *_, name in found[:3]] == ["rank0", "rank2", "rank10"]


def test_a_bare_rank_folder_in_a_step_folder_is_rank_zero(tmp_path: Path) -> None:
    _rank(tmp_path / "step0" / "rank")
    assert _found(tmp_path) == [(0, 0, "rank")]


def test_a_proc_folder_in_a_step_folder_is_rank_zero(tmp_path: Path) -> None:
    _rank(tmp_path / "step1" / "proc2016")
    assert _found(tmp_path / "step1") == [(1, 0, "proc2016")]


def test_the_public_resnet_dump_with_proc_folders_has_two_steps_of_rank_zero() -> None:
    root = fixture_path("msprobe-resnet50-gpu")
    layout = discover(root)
    assert layout.kind is LayoutKind.STEPS
    assert _found(root) == [(0, 0, "proc2016"), (1, 0, "proc2016")]
    # README.md and msprobe's reference folders sit beside step0/ and step1/
    assert sorted(Path(warning.split(":")[0]).name for warning in layout.warnings) == [
        "README.md",
        "reference-build",
        "reference-compare-step1-vs-step0",
    ]


def test_stray_files_and_folders_are_named_in_warnings_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "dump"
    write_dump_root(root, {(0, 0): tiny_model(), (0, 1): tiny_model()})
    (root / "notes.txt").write_text("run notes")
    (root / "logs").mkdir()
    (root / "step0" / "README").write_text("what this is")
    (root / "step0" / "tmp").mkdir()
    (root / "step0" / "rankX").mkdir()
    layout = discover(root)
    assert _found(root) == [(0, 0, "rank0"), (0, 1, "rank1")]
    warned = {Path(warning.split(": ")[0]) for warning in layout.warnings}
    assert warned == {
        root / "notes.txt",
        root / "logs",
        root / "step0" / "README",
        root / "step0" / "tmp",
        root / "step0" / "rankX",
    }
    assert all("skipped" in warning for warning in layout.warnings)


def test_a_build_beside_stray_entries_goes_on_and_records_the_warnings(tmp_path: Path) -> None:
    root = tmp_path / "step4"
    for rank in (0, 1):
        _rank(root / f"rank{rank}")
    (root / "launch.sh").write_text("torchrun ...")
    result = run_build(BuildOptions(target=root, output_dir=tmp_path / "out", workers=1))
    assert result.ranks == [0, 1] and result.steps == [4]
    assert any(str(root / "launch.sh") in warning for warning in result.warnings)
    with sqlite3.connect(result.path) as conn:
        (stored,) = conn.execute("SELECT value FROM gb_meta WHERE key = 'warnings'").fetchone()
        ranks = conn.execute("SELECT DISTINCT step, rank FROM tb_nodes ORDER BY rank").fetchall()
    assert any("launch.sh" in warning for warning in json.loads(stored))
    assert ranks == [(4, 0), (4, 1)]


def test_a_proc_folder_beside_rank_folders_is_skipped_with_a_warning(tmp_path: Path) -> None:
    _rank(tmp_path / "rank0")
    _rank(tmp_path / "proc77")
    layout = discover(tmp_path)
    assert _found(tmp_path) == [(0, 0, "rank0")]
    assert any("proc77" in warning and "skipped" in warning for warning in layout.warnings)


def test_several_proc_folders_are_an_error_naming_them(tmp_path: Path) -> None:
    _rank(tmp_path / "step0" / "proc11")
    _rank(tmp_path / "step0" / "proc12")
    with pytest.raises(LayoutError) as caught:
        discover(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "step0") in message
    assert "proc11" in message and "proc12" in message
    assert "one proc<pid> folder" in message


def test_both_rank_and_rank0_are_an_error(tmp_path: Path) -> None:
    _rank(tmp_path / "rank")
    _rank(tmp_path / "rank0")
    with pytest.raises(LayoutError, match=r"both rank and rank0 claim rank 0"):
        discover(tmp_path)


def test_a_folder_with_only_tensor_data_is_a_rank_folder_missing_its_json_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "rank0" / "dump_tensor_data").mkdir(parents=True)
    with pytest.raises(LayoutError) as caught:
        discover(tmp_path / "rank0")
    assert "missing construct.json, dump.json, stack.json" in str(caught.value)
