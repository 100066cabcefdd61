"""Dump folders: the one inside an unpacked archive, and those under the data dir that a
build can start from."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from graphboard.dump.layout import DUMP_FILES, TENSOR_DIR, discover
from graphboard.errors import GraphboardError
from graphboard.server.paths import InvalidGraphId, check_graph_id

# Folders whose name means something to discover(): never skipped over as a wrapper.
_MEANINGFUL = re.compile(r"^(step\d+|rank\d*|proc\d+)$")
_JUNK = {"__MACOSX", ".DS_Store"}
MAPPING_SUFFIXES = (".yaml", ".yml")


def dump_root(folder: Path) -> Path:
    """The dump inside an unpacked archive. An archive of ``target/`` holds one wrapper
    folder: go down through such lone folders, but not into a stepN, rankN or proc<pid>
    folder, whose name tells discover() which step or rank it is."""
    root = folder
    while True:
        entries = [entry for entry in root.iterdir() if entry.name not in _JUNK]
        if len(entries) != 1:
            return root
        (only,) = entries
        if not only.is_dir() or only.is_symlink() or _MEANINGFUL.match(only.name):
            return root
        if only.name in DUMP_FILES or only.name == TENSOR_DIR:
            return root
        root = only


def relative_message(error: BaseException, base: Path, label: str = "") -> str:
    """An error message with the server's folder replaced by ``label`` (or nothing), so a
    client reads ``target/step0/rank0: missing construct.json``, not our disk layout."""
    text = str(error)
    prefix = str(base)
    replacement = f"{label}/" if label else ""
    return text.replace(prefix + os.sep, replacement).replace(prefix, label or ".")


class BadFolder(ValueError):
    """A folder name a client sent that cannot name a folder under the data dir."""


def resolve_folder(data_root: Path, relative: str) -> Path:
    """The folder ``relative`` names under the data dir: no '..', hidden or absolute parts,
    and it must still be under the data dir once symlinks are followed."""
    relative = relative.strip().strip("/")
    try:
        parts = check_graph_id(relative)
    except InvalidGraphId as error:
        raise BadFolder(f"{relative!r}: {str(error).replace('graph id', 'folder')}") from None
    candidate = data_root.joinpath(*parts)
    try:
        real = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise BadFolder(f"{relative!r}: no such folder under the data dir") from None
    if not real.is_relative_to(data_root):
        raise BadFolder(f"{relative!r}: outside the data dir")
    return real


def refuse_links_out(data_root: Path, folder: Path) -> None:
    """BadFolder naming the first symbolic link a build of ``folder`` (resolved, under the
    data dir) would follow out of the data dir: a step or rank folder, a dump file, the
    tensor folder or anything in it. resolve_folder checks only ``folder`` itself."""
    try:
        layout = discover(folder)
    except GraphboardError:
        return  # not a dump: validate() says why
    for rank in layout.ranks:
        inner = rank.path.relative_to(folder).parts
        read = [folder.joinpath(*inner[: depth + 1]) for depth in range(len(inner))]
        read += [rank.file(name) for name in DUMP_FILES]
        for path in read:
            _refuse_if_outside(data_root, path)
        tensors = rank.file(TENSOR_DIR)
        if tensors.exists() or tensors.is_symlink():
            _refuse_if_outside(data_root, tensors)
            for base, subfolders, files in os.walk(tensors, followlinks=False):
                for name in subfolders + files:
                    if os.path.islink(os.path.join(base, name)):
                        _refuse_if_outside(data_root, Path(base, name))


def _refuse_if_outside(data_root: Path, path: Path) -> None:
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing (a dangling link) or a loop: the build says so
        return
    if not real.is_relative_to(data_root):
        shown = path.relative_to(data_root).as_posix()
        raise BadFolder(f"{shown!r} is a symbolic link leading outside the data dir")


@dataclass(frozen=True, slots=True)
class DumpFolder:
    path: str  # under the data dir, '/'-separated
    kind: str | None  # rank | ranks | steps; None when invalid
    steps: list[int]
    ranks: list[int]
    error: str | None


def _looks_like_dump(names: list[str], folders: list[str]) -> bool:
    if any(name in DUMP_FILES for name in names) or TENSOR_DIR in folders:
        return True
    return any(_MEANINGFUL.match(name) for name in folders)


def find_dump_folders(
    data_root: Path, *, max_depth: int = 6, limit: int = 500
) -> tuple[list[DumpFolder], list[str], bool]:
    """Candidate dump folders (each checked with discover(), so an invalid one comes with
    the reason), layer-mapping YAML files, and whether the listing was cut at ``limit``."""
    found: list[DumpFolder] = []
    mappings: list[str] = []
    truncated = False
    for folder, subfolders, files in os.walk(data_root, followlinks=False):
        base = Path(folder)
        relative = base.relative_to(data_root)
        depth = len(relative.parts)
        subfolders[:] = sorted(
            name for name in subfolders if not name.startswith(".") and name != TENSOR_DIR
        )
        if depth >= max_depth:
            subfolders[:] = []
        mappings.extend(
            (relative / name).as_posix()
            for name in sorted(files)
            if name.endswith(MAPPING_SUFFIXES) and not name.startswith(".")
        )
        if depth == 0 or not _looks_like_dump(files, subfolders):
            continue
        if len(found) >= limit:
            truncated = True
            break
        if any(name in DUMP_FILES for name in files):
            subfolders[:] = []  # a rank folder: what is inside is its own data
        try:
            layout = discover(base)
        except GraphboardError as error:
            found.append(
                DumpFolder(relative.as_posix(), None, [], [], relative_message(error, data_root))
            )
            continue
        found.append(
            DumpFolder(relative.as_posix(), layout.kind.value, layout.steps, layout.rank_ids, None)
        )
    return found, mappings[:limit], truncated
