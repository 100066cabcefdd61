"""Unpacking an uploaded ``.tar.gz`` (or ``.tar``) or ``.zip`` without trusting it.

Every member is checked before anything is written: its name must stay inside the
destination (no ``..``, no absolute or drive paths, no backslashes), and only regular files
and folders are accepted (symlinks, hard links, devices and FIFOs are refused, naming the
member). Sizes and counts are enforced *while* extracting, on the bytes actually produced
(an archive's declared sizes can lie), so a bomb stops at the limit instead of filling the
disk. Files are created with ``O_EXCL | O_NOFOLLOW``: nothing is overwritten or followed.
"""

from __future__ import annotations

import gzip
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

CHUNK = 1 << 20
MAX_DEPTH = 64
MAX_SEGMENT = 255
# tarfile reads a pax or GNU long-name header whole into memory; a real one is a few
# hundred bytes, so more than this between two members is an attack, not a dump.
MAX_HEADER_BYTES = 4 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


class ArchiveError(Exception):
    """An archive refused as unsafe or unreadable (HTTP 400)."""

    code = "bad_archive"

    def __init__(self, message: str, *, member: str | None = None, code: str | None = None):
        super().__init__(message)
        self.member = member
        if code is not None:
            self.code = code


class ArchiveTooLarge(ArchiveError):
    """Unpacking would pass the size or file-count limit (HTTP 413)."""

    code = "archive_too_large"


@dataclass(slots=True)
class Budget:
    """What one upload may still unpack, shared by its archives."""

    bytes_left: int
    files_left: int
    bytes_used: int = 0
    files_used: int = 0

    def take_file(self, member: str) -> None:
        if self.files_left <= 0:
            raise ArchiveTooLarge(
                f"more than {self.files_used} files: the upload's file limit is reached at {member!r}",
                member=member,
            )
        self.files_left -= 1
        self.files_used += 1

    def take_bytes(self, count: int, member: str) -> None:
        if count > self.bytes_left:
            raise ArchiveTooLarge(
                f"unpacking {member!r} passes the upload's limit of "
                f"{self.bytes_used + self.bytes_left} unpacked bytes",
                member=member,
            )
        self.bytes_left -= count
        self.bytes_used += count


def safe_parts(name: str) -> list[str]:
    """The path segments of a member name, or ArchiveError if it could land elsewhere."""
    if "\x00" in name:
        raise ArchiveError(f"member {name!r}: NUL in its name", member=name, code="unsafe_member")
    if "\\" in name:
        raise ArchiveError(
            f"member {name!r}: backslash in its name (use '/' separators)",
            member=name,
            code="unsafe_member",
        )
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveError(f"member {name!r}: absolute path", member=name, code="unsafe_member")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise ArchiveError(
            f"member {name!r}: '..' in its path leaves the upload folder",
            member=name,
            code="unsafe_member",
        )
    if len(parts) > MAX_DEPTH or any(len(part) > MAX_SEGMENT for part in parts):
        raise ArchiveError(f"member {name!r}: path too deep or too long", member=name)
    return parts


def _refuse_kind(name: str, kind: str) -> ArchiveError:
    return ArchiveError(
        f"member {name!r} is a {kind}; only regular files and folders are accepted",
        member=name,
        code="unsafe_member",
    )


def _make_dirs(dest: Path, parts: list[str], name: str) -> Path:
    folder = dest
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir()
        except FileExistsError:
            if folder.is_symlink() or not folder.is_dir():
                raise ArchiveError(
                    f"member {name!r}: {part!r} is a file and a folder", member=name
                ) from None
    return folder


def _write(dest: Path, parts: list[str], source: IO[bytes], name: str, budget: Budget) -> None:
    if not parts:
        raise ArchiveError(f"member {name!r}: a file without a name", member=name)
    folder = _make_dirs(dest, parts[:-1], name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        handle = os.open(folder / parts[-1], flags, 0o644)
    except FileExistsError:
        raise ArchiveError(f"member {name!r} appears twice", member=name) from None
    except IsADirectoryError:
        raise ArchiveError(f"member {name!r} is a file and a folder", member=name) from None
    with os.fdopen(handle, "wb") as out:
        while chunk := source.read(CHUNK):
            budget.take_bytes(len(chunk), name)
            out.write(chunk)


class _HeaderGuard:
    """A read-only stream that refuses a header (the bytes between two members' data)
    longer than MAX_HEADER_BYTES, so tarfile never buffers a giant pax record."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.in_data = False
        self.header_bytes = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = CHUNK
        if not self.in_data:
            self.header_bytes += size
            if self.header_bytes > MAX_HEADER_BYTES:
                raise ArchiveTooLarge(
                    f"a member header of more than {MAX_HEADER_BYTES} bytes", code="bad_archive"
                )
        return self.raw.read(size)


def _tar_members(tar: tarfile.TarFile, guard: _HeaderGuard) -> Iterator[tarfile.TarInfo]:
    while True:
        guard.in_data, guard.header_bytes = False, 0
        member = tar.next()
        if member is None:
            return
        yield member


def _unpack_tar(raw: BinaryIO, dest: Path, budget: Budget) -> None:
    guard = _HeaderGuard(raw)
    # Stream mode: one pass, nothing seeks back, members are checked as they come.
    with tarfile.open(fileobj=guard, mode="r|") as tar:  # type: ignore[call-overload]
        for member in _tar_members(tar, guard):
            name = member.name
            parts = safe_parts(name)
            if member.issym():
                raise _refuse_kind(name, "symbolic link")
            if member.islnk():
                raise _refuse_kind(name, "hard link")
            if member.ischr() or member.isblk():
                raise _refuse_kind(name, "device file")
            if member.isfifo():
                raise _refuse_kind(name, "FIFO")
            if member.isdir():
                budget.take_file(name)
                _make_dirs(dest, parts, name)
                continue
            if not member.isreg():
                raise _refuse_kind(name, "special member")
            budget.take_file(name)
            if member.size > budget.bytes_left:  # declared too big: stop before reading it
                budget.take_bytes(member.size, name)
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has content
            guard.in_data = True
            _write(dest, parts, source, name, budget)


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    """What a Unix-made member really is, from its mode bits; None for files and folders."""
    mode = info.external_attr >> 16
    if info.create_system != 3 or mode == 0:  # not from Unix: no file type recorded
        return None
    if stat.S_ISLNK(mode):
        return "symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return None


def _unpack_zip(path: Path, dest: Path, budget: Budget) -> None:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename
            parts = safe_parts(name)
            kind = _zip_kind(info)
            if kind is not None:
                raise _refuse_kind(name, kind)
            if info.flag_bits & 0x1:
                raise ArchiveError(f"member {name!r} is encrypted", member=name)
            budget.take_file(name)
            if info.is_dir():
                _make_dirs(dest, parts, name)
                continue
            if info.file_size > budget.bytes_left:
                budget.take_bytes(info.file_size, name)
            with archive.open(info) as source:
                _write(dest, parts, source, name, budget)


def unpack(archive: Path, dest: Path, budget: Budget) -> None:
    """Unpack ``archive`` (gzip-compressed or plain tar, or zip) into the folder ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    with archive.open("rb") as raw:
        magic = raw.read(4)
        raw.seek(0)
        try:
            if magic[:2] == _GZIP_MAGIC:
                with gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
                    _unpack_tar(unzipped, dest, budget)  # type: ignore[arg-type]
            elif magic in _ZIP_MAGIC:
                _unpack_zip(archive, dest, budget)
            elif _is_tar(archive):
                _unpack_tar(raw, dest, budget)
            else:
                raise ArchiveError("not a .tar.gz, .tar or .zip archive")
        except ArchiveError:
            raise
        except (
            tarfile.TarError,
            zipfile.BadZipFile,
            zlib.error,
            gzip.BadGzipFile,
            EOFError,
        ) as error:
            raise ArchiveError(f"the archive is damaged or truncated: {error}") from None
        except OSError as error:
            raise ArchiveError(f"cannot unpack the archive: {error.strerror or error}") from None


def _is_tar(path: Path) -> bool:
    with path.open("rb") as raw:
        header = raw.read(tarfile.BLOCKSIZE)
    return len(header) == tarfile.BLOCKSIZE and header[257:262] == b"ustar"
