"""The output file's life: a temporary name beside the final one, removed on any failure,
linked under the final name only when complete (never over an existing file)."""

from __future__ import annotations

import os
import secrets
import sqlite3
from contextlib import suppress
from pathlib import Path

from graphboard.errors import StoreError
from graphboard.pipeline.options import BuildOptions


def temp_path_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def part_paths(output_dir: Path, name: str, count: int) -> list[Path]:
    """Where a build's ``count`` tasks write their parts: temporary names beside the output."""
    stem = temp_path_for(output_dir / name)
    return [stem.with_name(f"{stem.name}.part{index}") for index in range(count)]


def check_output_name(name: str) -> None:
    """--name is a file name inside the output folder (-o), never a path: ``../x.vis.db`` or
    an absolute name would write where the operator did not point -o."""
    separators = {os.sep, *([os.altsep] if os.altsep else []), "\0"}
    if name in ("", ".", "..") or any(mark in name for mark in separators):
        raise StoreError(
            f"--name {name!r}: expected a file name inside the output folder (-o), "
            "not a path; use -o to choose the folder"
        )


def current_umask() -> int:
    """This process's umask: read from Linux's /proc without changing it; elsewhere set and
    restored at once (only commands call this, never a server's threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def ensure_output_dir(options: BuildOptions) -> None:
    make_output_dir(options.output_dir)


def make_output_dir(folder: Path) -> None:
    """Create the output folder (-o) if missing, or say in one line why it cannot be."""
    if folder.is_symlink() and not folder.exists():
        raise StoreError(
            f"{folder}: cannot create the output folder: it is a symbolic link to "
            f"{os.readlink(folder)}, which does not exist"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(
            f"{folder}: cannot create the output folder: {error.strerror or error}"
        ) from None


def remove(leftovers: list[Path]) -> None:
    """Remove a failed build's temporary files. One that cannot be removed (a read-only
    folder: it was never created) must not replace the error that failed the build."""
    for leftover in leftovers:
        with suppress(OSError):
            leftover.unlink(missing_ok=True)


def output_error(error: sqlite3.Error | OSError, path: Path) -> StoreError:
    """What failed writing the .vis.db, in one line naming it (a full disk, a folder made
    read-only meanwhile...)."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return StoreError(f"{path}: cannot write the database: {reason}")


def claim_final_path(temp: Path, directory: Path, name: str) -> Path:
    """Link the finished file under ``name`` (or name_2, _3... if taken): never overwrite."""
    stem = name.removesuffix(".vis.db")
    suffix = 1
    while True:
        candidate = directory / (name if suffix == 1 else f"{stem}_{suffix}.vis.db")
        try:
            os.link(temp, candidate)
        except FileExistsError:
            suffix += 1
            continue
        except OSError:
            if candidate.exists():
                suffix += 1
                continue
            os.replace(temp, candidate)  # filesystems without hard links
            return candidate
        temp.unlink()
        return candidate
