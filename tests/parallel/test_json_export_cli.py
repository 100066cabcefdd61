"""``--file_type json``'s rules on real parallel dumps, as msprobe's: an error with a golden dump,
a warning and a db without the merge flags, an error for one rank's folder; and a failed
export leaves nothing behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from parallel_dumps import DumpFn

from dumpmaker import USER_FILE, assert_nothing_written, output_folder
from test_cli import _error_line, graph_build

TP2 = ["--rank_size", "2", "--tp", "2", "--pp", "1"]
TP2_VS_TP2 = ["--rank_size", "2", "2", "--tp", "2", "2", "--pp", "1", "1"]
COMPARE = "--file_type json is only for a merged build, not a compare (-gp); use db"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return output_folder(tmp_path)


@pytest.mark.parametrize("flags", [TP2_VS_TP2, []])
def test_a_compare_is_refused(parallel_dump: DumpFn, out: Path, flags: list[str]) -> None:
    root = parallel_dump("tp2").root
    run = graph_build("-tp", root, "-gp", root, "-o", out, *flags, "--file_type", "json")
    assert _error_line(run) == COMPARE
    assert_nothing_written(out)


def test_without_the_merge_flags_a_db_is_written_with_a_warning(
    parallel_dump: DumpFn, out: Path
) -> None:
    rank = parallel_dump("tp2").root / "step0" / "rank0"
    run = graph_build("-tp", rank, "-o", out, "--file_type", "json", "-q")
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [
        "graph_build: warning: --file_type json is only for merged builds (--rank_size --tp"
        " --pp); writing a db"
    ]
    assert [path.suffixes for path in out.glob("*.vis.db")] == [[".vis", ".db"]]


def test_one_ranks_folder_is_refused(parallel_dump: DumpFn, out: Path) -> None:
    rank = parallel_dump("tp2").root / "step0" / "rank0"
    run = graph_build("-tp", rank, "-o", out, *TP2, "--file_type", "json")
    assert _error_line(run) == (
        f"{rank}: --rank_size 2 merges the rank folders of a dump, but this is one rank's"
        " folder; give the target dump's root or step folder"
    )
    assert_nothing_written(out)


def test_a_failed_export_leaves_nothing_behind(
    parallel_dump: DumpFn, out: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(parallel_dump("tp2").root, broken)
    dump = broken / "step0" / "rank1" / "dump.json"
    dump.write_text(dump.read_text()[:-1000])  # cut off: rank 1 fails after rank 0 was read
    run = graph_build("-tp", broken, "-o", out, *TP2, "--file_type", "json")
    assert str(dump) in _error_line(run)
    assert_nothing_written(out)


def test_an_existing_export_is_not_overwritten(parallel_dump: DumpFn, out: Path) -> None:
    (out / "step0" / "rank0").mkdir(parents=True)
    run = graph_build("-tp", parallel_dump("tp2").root, "-o", out, *TP2, "--file_type", "json")
    assert _error_line(run) == (
        f"--file_type json: {out / 'step0' / 'rank0'} already exists; give an empty output"
        " folder (-o)"
    )
    assert sorted(path.name for path in out.iterdir()) == sorted(["step0", USER_FILE])
    assert list((out / "step0").iterdir()) == [out / "step0" / "rank0"]
    assert list((out / "step0" / "rank0").iterdir()) == []
