"""graph_build against a broken file system: a symbolic link loop in a dump, a read-only
output folder, a full disk. Each fails with one line naming the path, exit 1, and leaves the
output folder as it was.

A read-only folder and a full disk are real: a tmpfs mounted read-only, or smaller than the
file. Tests (and CI) run as root, which chmod cannot stop, and ``chattr +i`` needs both a
capability containers often lack and a file system that has the flag; a mount needs root
(CAP_SYS_ADMIN) too, so where it is refused those tests are skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from dumpmaker import USER_FILE, assert_nothing_written, output_folder, tiny_model
from fixture_cases import fixture_path
from test_cli import _error_line, graph_build

LOOP = "is a symbolic link loop (too many levels of symbolic links); expected a link to a real file or folder"


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A dump root: step0/rank0."""
    tiny_model().write(tmp_path / "dump" / "step0" / "rank0")
    return tmp_path / "dump"


def _loop_as_a_rank(dump: Path) -> Path:
    (dump / "step0" / "rank1").symlink_to("rank1")
    return dump / "step0" / "rank1"


def _loop_as_a_step(dump: Path) -> Path:
    (dump / "step1").symlink_to("step1")
    return dump / "step1"


def _two_links_to_each_other(dump: Path) -> Path:
    (dump / "step0" / "a").symlink_to("b")
    (dump / "step0" / "b").symlink_to("a")
    return dump / "step0" / "a"


def _loop_as_a_dump_file(dump: Path) -> Path:
    dump_json = dump / "step0" / "rank0" / "dump.json"
    dump_json.unlink()
    dump_json.symlink_to("dump.json")
    return dump_json


@pytest.mark.parametrize(
    "make_loop",
    [_loop_as_a_rank, _loop_as_a_step, _two_links_to_each_other, _loop_as_a_dump_file],
)
def test_a_symbolic_link_loop_in_a_dump_fails_with_one_line(
    dump: Path, tmp_path: Path, make_loop: object
) -> None:
    assert callable(make_loop)
    loop = make_loop(dump)
    out = output_folder(tmp_path)
    assert _error_line(graph_build("-tp", dump, "-o", out)) == f"{loop}: {LOOP}"
    assert_nothing_written(out)


def test_a_dump_path_that_is_a_loop_fails_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    out = output_folder(tmp_path)
    assert _error_line(graph_build("-tp", tmp_path / "loop", "-o", out)) == (
        f"{tmp_path / 'loop'}: {LOOP}"
    )
    assert_nothing_written(out)


@contextmanager
def _tmpfs(folder: Path, size: int) -> Iterator[Path]:
    """``folder``, a tmpfs of ``size`` bytes holding the user's file, for the block."""
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if os.geteuid() != 0 or mount is None or umount is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    folder.mkdir()
    mounted = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        (folder / USER_FILE).write_text("not graphboard's")
        yield folder
    finally:
        subprocess.run([umount, str(folder)], check=True)


def _remount_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


@pytest.fixture
def compare_dumps() -> tuple[Path, Path]:
    case = fixture_path("convnet-stats")
    return case / "target", case / "golden"


def test_a_read_only_output_folder_fails_with_one_line(
    compare_dumps: tuple[Path, Path], tmp_path: Path
) -> None:
    target, golden = compare_dumps
    with _tmpfs(tmp_path / "out", 1024 * 1024) as out:
        _remount_read_only(out)
        message = _error_line(graph_build("-tp", target, "-gp", golden, "-o", out))
        assert message.startswith(f"{out}/.compare_"), message
        assert message.endswith(": cannot create the file: Read-only file system"), message
        assert_nothing_written(out)


@pytest.mark.parametrize("free", [0.5, 0.9, 0.99])
def test_a_full_disk_fails_with_one_line(
    compare_dumps: tuple[Path, Path], tmp_path: Path, free: float
) -> None:
    """``free``: the space on the disk, as a fraction of the finished file. The disk fills
    at different stages: while the nodes table is written (C), while SQLite writes the
    part's other tables, while the file is finished (links, indexes)."""
    target, golden = compare_dumps
    fits = tmp_path / "fits"
    built = graph_build("-tp", target, "-gp", golden, "-o", fits, "-q")
    assert built.returncode == 0, built.stderr
    size = Path(built.stdout.strip()).stat().st_size
    with _tmpfs(tmp_path / "out", int(size * free) + 4096) as out:  # + the user's file
        message = _error_line(graph_build("-tp", target, "-gp", golden, "-o", out))
        assert message.startswith(f"{out}/"), message
        assert message.endswith(("No space left on device", "database or disk is full")), message
        assert_nothing_written(out)
