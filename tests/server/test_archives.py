"""Unpacking uploads: names that leave the folder, links and devices, bombs (stopped while
extracting), damaged archives; and finding the dump inside."""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from ci_support import member, tar_gz, tar_members, zip_folder
from graphboard.server.uploads.archives import (
    MAX_HEADER_BYTES,
    ArchiveError,
    ArchiveTooLarge,
    Budget,
    safe_parts,
    unpack,
)
from graphboard.server.uploads.dumps import dump_root

ROOMY = Budget(bytes_left=1 << 30, files_left=10_000)


def _budget(max_bytes: int = 1 << 30, max_files: int = 10_000) -> Budget:
    return Budget(bytes_left=max_bytes, files_left=max_files)


def test_a_folder_round_trips_as_tar_gz_and_zip(tmp_path: Path) -> None:
    source = tmp_path / "dump" / "step0" / "rank0"
    source.mkdir(parents=True)
    for name in ("construct.json", "dump.json", "stack.json"):
        (source / name).write_text("{}")
    for maker, name in ((tar_gz, "a.tar.gz"), (zip_folder, "a.zip")):
        archive = maker(tmp_path / "dump", tmp_path / name)
        dest = tmp_path / f"out-{name}"
        budget = _budget()
        unpack(archive, dest, budget)
        assert (dest / "dump/step0/rank0/dump.json").read_text() == "{}"
        assert budget.bytes_used == 6
        assert dump_root(dest) == dest / "dump"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../evil.txt", "'..'"),
        ("dump/../../evil.txt", "'..'"),
        ("/etc/evil.txt", "absolute path"),
        ("C:/evil.txt", "absolute path"),
        ("dump\\..\\evil.txt", "backslash"),
    ],
)
def test_names_that_leave_the_folder_are_refused(tmp_path: Path, name: str, problem: str) -> None:
    archive = tar_members(tmp_path / "bad.tar.gz", [(member(name), b"x")])
    with pytest.raises(ArchiveError, match=problem) as raised:
        unpack(archive, tmp_path / "out", _budget())
    assert raised.value.member == name and raised.value.code == "unsafe_member"
    assert not (tmp_path / "evil.txt").exists()


@pytest.mark.parametrize(
    ("kind", "fields", "shown"),
    [
        (tarfile.SYMTYPE, {"linkname": "/etc/passwd"}, "symbolic link"),
        (tarfile.LNKTYPE, {"linkname": "dump/a.json"}, "hard link"),
        (tarfile.CHRTYPE, {"devmajor": 1, "devminor": 3}, "device file"),
        (tarfile.BLKTYPE, {"devmajor": 8, "devminor": 0}, "device file"),
        (tarfile.FIFOTYPE, {}, "FIFO"),
    ],
)
def test_links_and_devices_are_refused_by_name(
    tmp_path: Path, kind: bytes, fields: dict[str, object], shown: str
) -> None:
    archive = tar_members(
        tmp_path / "bad.tar.gz",
        [(member("dump/a.json"), b"{}"), (member("dump/link", kind, **fields), None)],
    )
    with pytest.raises(ArchiveError, match=f"'dump/link' is a {shown}") as raised:
        unpack(archive, tmp_path / "out", _budget())
    assert raised.value.member == "dump/link"
    assert not (tmp_path / "out" / "dump" / "link").exists()


def test_zip_symlinks_are_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        info = zipfile.ZipInfo("dump/link")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        handle.writestr(info, "/etc/passwd")
    with pytest.raises(ArchiveError, match="symbolic link"):
        unpack(archive, tmp_path / "out", _budget())


def test_a_size_bomb_stops_before_the_member_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.tar.gz"
    size = 64 << 20  # 64 MiB of zeros: 64 KB compressed
    with tarfile.open(archive, "w:gz") as handle:
        handle.addfile(member("dump/zeros.bin", size=size), io.BytesIO(bytes(size)))
    assert archive.stat().st_size < 200_000
    with pytest.raises(ArchiveTooLarge, match="1048576 unpacked bytes"):
        unpack(archive, tmp_path / "out", _budget(max_bytes=1 << 20))
    assert not (tmp_path / "out" / "dump" / "zeros.bin").exists()


def test_the_size_limit_is_enforced_while_extracting(tmp_path: Path) -> None:
    """Files that each fit, together too big: unpacking stops at the limit, with what came
    before it on disk and never more than the limit."""
    chunk = bytes(300_000)
    archive = tar_members(
        tmp_path / "many.tar.gz", [(member(f"dump/{index}.bin"), chunk) for index in range(10)]
    )
    with pytest.raises(ArchiveTooLarge) as raised:
        unpack(archive, tmp_path / "out", _budget(max_bytes=1_000_000))
    assert raised.value.member == "dump/3.bin"
    written = sum(path.stat().st_size for path in (tmp_path / "out").rglob("*") if path.is_file())
    assert written <= 1_000_000
    assert sorted(path.name for path in (tmp_path / "out" / "dump").iterdir()) == [
        "0.bin",
        "1.bin",
        "2.bin",
    ]


def test_a_zip_bomb_is_measured_on_the_bytes_it_inflates_to(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("dump/zeros.bin", bytes(32 << 20))
    with pytest.raises(ArchiveTooLarge):
        unpack(archive, tmp_path / "out", _budget(max_bytes=1 << 20))


def test_a_file_count_bomb_is_refused(tmp_path: Path) -> None:
    archive = tar_members(
        tmp_path / "files.tar.gz", [(member(f"dump/{index}"), b"") for index in range(200)]
    )
    with pytest.raises(ArchiveTooLarge, match="file limit"):
        unpack(archive, tmp_path / "out", _budget(max_files=50))
    assert len(list((tmp_path / "out" / "dump").iterdir())) <= 50


def test_the_budget_is_shared_by_an_uploads_archives(tmp_path: Path) -> None:
    one = tar_members(tmp_path / "one.tar.gz", [(member("a/x"), bytes(600))])
    two = tar_members(tmp_path / "two.tar.gz", [(member("b/x"), bytes(600))])
    budget = _budget(max_bytes=1000)
    unpack(one, tmp_path / "one", budget)
    with pytest.raises(ArchiveTooLarge):
        unpack(two, tmp_path / "two", budget)


def test_a_giant_pax_header_is_refused_before_it_is_read_whole(tmp_path: Path) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as handle:
        info = member("dump/a.json", size=2)
        info.pax_headers = {"comment": "x" * (MAX_HEADER_BYTES + 1024)}
        handle.addfile(info, io.BytesIO(b"{}"))
    archive = tmp_path / "pax.tar.gz"
    archive.write_bytes(gzip.compress(raw.getvalue()))
    with pytest.raises(ArchiveError, match="header"):
        unpack(archive, tmp_path / "out", _budget())


def test_duplicates_damage_and_other_formats(tmp_path: Path) -> None:
    twice = tar_members(
        tmp_path / "twice.tar.gz", [(member("dump/a"), b"1"), (member("dump/a"), b"2")]
    )
    with pytest.raises(ArchiveError, match="appears twice"):
        unpack(twice, tmp_path / "out1", _budget())
    good = tar_members(tmp_path / "good.tar.gz", [(member("dump/a"), os.urandom(100_000))])
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ArchiveError, match="damaged or truncated"):
        unpack(truncated, tmp_path / "out2", _budget())
    text = tmp_path / "notes.txt"
    text.write_text("not an archive")
    with pytest.raises(ArchiveError, match=r"not a \.tar\.gz, \.tar or \.zip"):
        unpack(text, tmp_path / "out3", _budget())


def test_safe_parts_drops_dot_segments() -> None:
    assert safe_parts("./dump//step0/./rank0/") == ["dump", "step0", "rank0"]
    assert safe_parts("./") == []


def test_dump_root_goes_through_wrappers_but_not_into_step_or_rank_folders(tmp_path: Path) -> None:
    (tmp_path / "a" / "wrapper" / "step0" / "rank0").mkdir(parents=True)
    assert dump_root(tmp_path / "a") == tmp_path / "a" / "wrapper"
    (tmp_path / "b" / "rank0").mkdir(parents=True)
    (tmp_path / "b" / "__MACOSX").mkdir()
    assert dump_root(tmp_path / "b") == tmp_path / "b"
    (tmp_path / "c" / "run").mkdir(parents=True)
    (tmp_path / "c" / "run" / "dump.json").write_text("{}")
    assert dump_root(tmp_path / "c") == tmp_path / "c" / "run"
