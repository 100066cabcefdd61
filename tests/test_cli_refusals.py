"""Hostile or unlucky output places get a one-line error naming them, and nothing half-written
(issue 30, point 6): ``--file_type json`` onto a dangling symlink, a read-only mount or a full
disk; ``graphboard table -o`` on a read-only mount, a full disk, an existing file or
``--rank 2**63``; ``--auto-match`` under umask 222; ``--name`` outside ``-o``; ``--vpp`` on
a dump without virtual-pipeline chunks.

Read-only mounts and full disks are real: small tmpfs mounts (root only; skipped where this
process may not mount). Mode bits would not do, as root writes through them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dumpmaker import USER_FILE, assert_nothing_written, output_folder
from stopping_support import synthetic_dump
from test_cli import _error_line, graph_build, graphboard_command

TP2 = ["--rank_size", "2", "--tp", "2", "--pp", "1"]


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Synthetic dumps of two layers: a target, a golden, and two ranks to merge."""
    root = tmp_path_factory.mktemp("small")
    synthetic_dump(root / "target", "target", layers=2)
    synthetic_dump(root / "golden", "golden", layers=2)
    synthetic_dump(root / "ranks", "golden", ranks=2, layers=2)
    return root


@pytest.fixture(scope="module")
def compare(dumps: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("compare")
    run = graph_build("-tp", dumps / "target", "-gp", dumps / "golden", "-o", out, "-q")
    assert run.returncode == 0, run.stderr
    return Path(run.stdout.strip())


@contextmanager
def tmpfs(folder: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted on ``folder`` (``ro``, or ``size=16k`` for a disk that fills at once)."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _table_error(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 1, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphboard: error: "), run.stderr
    return lines[0].removeprefix("graphboard: error: ")


# --- --file_type json ---------------------------------------------------------------------


def test_an_export_onto_a_dangling_symlink_is_refused(dumps: Path, tmp_path: Path) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "gone")
    run = graph_build("-tp", dumps / "ranks", "-o", link, *TP2, "--file_type", "json")
    assert _error_line(run) == (
        f"{link}: cannot create the output folder: it is a symbolic link to "
        f"{tmp_path / 'gone'}, which does not exist"
    )
    assert not (tmp_path / "gone").exists()


def test_an_export_onto_a_read_only_mount_is_refused(dumps: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "ro") as out:
        run = graph_build("-tp", dumps / "ranks", "-o", out, *TP2, "--file_type", "json")
        assert _error_line(run) == f"{out}: cannot write the export: Read-only file system"


def test_an_export_onto_a_full_disk_leaves_nothing(dumps: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "full", "size=16k") as out:
        run = graph_build("-tp", dumps / "ranks", "-o", out, *TP2, "--file_type", "json")
        error = _error_line(run)
        assert error.endswith(": cannot write the export: No space left on device"), error
        assert list(out.iterdir()) == []


# --- graphboard table -o -------------------------------------------------------------------


def test_a_table_onto_a_read_only_mount_is_refused(compare: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "ro") as out:
        run = graphboard_command("table", compare, "-o", out / "t.csv")
        assert _table_error(run) == f"{out / 't.csv'}: cannot write: Read-only file system"


@pytest.mark.parametrize("suffix", [".csv", ".xlsx"])
def test_a_table_onto_a_full_disk_leaves_nothing(
    compare: Path, tmp_path: Path, suffix: str
) -> None:
    with tmpfs(tmp_path / "full", "size=16k") as out:
        run = graphboard_command("table", compare, "-o", out / f"t{suffix}")
        assert _table_error(run) == f"{out / f't{suffix}'}: cannot write: No space left on device"
        assert list(out.iterdir()) == []


def test_a_table_of_a_rank_past_sqlites_integers_is_refused(compare: Path, tmp_path: Path) -> None:
    run = graphboard_command("table", compare, "-o", tmp_path / "t.csv", "--rank", str(2**63))
    assert _table_error(run) == f"{compare.name}: no graph for rank {2**63} (ranks [0])"
    assert list(tmp_path.iterdir()) == []


def test_a_table_never_overwrites_a_file_without_force(compare: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    out.write_text("the user's\n")
    run = graphboard_command("table", compare, "-o", out)
    assert _table_error(run) == (
        f"{out}: exists already; give another name, or --force to overwrite it"
    )
    assert out.read_text() == "the user's\n"
    forced = graphboard_command("table", compare, "-o", out, "--force")
    assert forced.returncode == 0, forced.stderr
    assert out.read_text().startswith("NPU Name,")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["t.csv"]


# --- graph_build ---------------------------------------------------------------------------


def test_auto_match_under_a_umask_that_makes_the_file_read_only_is_refused(
    dumps: Path, tmp_path: Path
) -> None:
    out = output_folder(tmp_path)
    previous = os.umask(0o222)  # the child inherits it; this test process restores it
    try:
        run = graph_build(
            "-tp", dumps / "target", "-gp", dumps / "golden", "-o", out, "--auto-match", "0.5"
        )
    finally:
        os.umask(previous)
    assert _error_line(run) == (
        "--auto-match: the umask 0222 makes the new .vis.db read-only, so no match could be "
        "saved in it; build under a umask that lets its owner write (umask 022), or leave "
        "out --auto-match"
    )
    assert_nothing_written(out)


@pytest.mark.parametrize("name", ["../x.vis.db", "ABSOLUTE", "sub/x.vis.db", ".."])
def test_a_name_outside_the_output_folder_is_refused(
    dumps: Path, tmp_path: Path, name: str
) -> None:
    out = output_folder(tmp_path)
    if name == "ABSOLUTE":
        name = str(tmp_path / "x.vis.db")
    run = graph_build("-tp", dumps / "target", "-o", out, "--name", name)
    assert _error_line(run) == (
        f"--name {name!r}: expected a file name inside the output folder (-o), not a path; "
        "use -o to choose the folder"
    )
    assert_nothing_written(out)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]


def test_vpp_on_a_dump_without_model_chunks_is_refused(dumps: Path, tmp_path: Path) -> None:
    out = output_folder(tmp_path)
    run = graph_build(
        "-tp", dumps / "ranks", "-o", out, "--rank_size", "2", "--tp", "1", "--pp", "2",
        "--vpp", "3",
    )  # fmt: skip
    assert _error_line(run) == (
        "--vpp 3: the dump of rank 0 has no virtual-pipeline chunks (no top-level module "
        "named Module.<chunk>.*, as a model list is dumped); drop --vpp, or give the dump "
        "of a virtual-pipeline run"
    )
    assert_nothing_written(out)
    assert (out / USER_FILE).exists()
