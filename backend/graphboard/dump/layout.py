"""Find the step and rank folders of a dump, whatever shape the user points at.

Accepted shapes (those msprobe writes): a rank folder holding construct.json / dump.json /
stack.json; a folder of ``rankN`` (or a bare ``rank``, or one ``proc<pid>``) folders; a dump root
of ``stepN`` folders. Anything else beside the expected folders is reported and skipped.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from graphboard.errors import LayoutError

DUMP_FILES = ("construct.json", "dump.json", "stack.json")
TENSOR_DIR = "dump_tensor_data"
_STEP = re.compile(r"^step(\d+)$")
_RANK = re.compile(r"^rank(\d*)$")
_PROC = re.compile(r"^proc(\d+)$")


class LayoutKind(StrEnum):
    RANK = "rank"  # one rank folder
    RANKS = "ranks"  # a step folder of rank folders
    STEPS = "steps"  # a dump root of step folders


@dataclass(frozen=True, slots=True)
class RankDir:
    step: int
    rank: int
    path: Path

    def file(self, name: str) -> Path:
        return self.path / name


@dataclass(slots=True)
class DumpLayout:
    root: Path
    kind: LayoutKind
    ranks: list[RankDir]
    warnings: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[int]:
        return sorted({item.step for item in self.ranks})

    @property
    def rank_ids(self) -> list[int]:
        return sorted({item.rank for item in self.ranks})

    def get(self, step: int, rank: int) -> RankDir | None:
        for item in self.ranks:
            if item.step == step and item.rank == rank:
                return item
        return None


def _refuse_loop(path: str | Path) -> None:
    """A LayoutError if ``path`` is a symbolic link leading back to itself (ELOOP), which
    pathlib's tests would report as missing, and DirEntry's raise as a bare OSError."""
    try:
        os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise LayoutError(
                path,
                "is a symbolic link loop (too many levels of symbolic links)",
                expected="a link to a real file or folder",
            ) from None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # it only raises on what stat cannot follow: a link loop
        _refuse_loop(entry.path)
        raise


def _entries(path: Path) -> list[os.DirEntry[str]]:
    _refuse_loop(path)
    if not path.exists():
        raise LayoutError(path, "no such file or folder")
    if not path.is_dir():
        raise LayoutError(
            path,
            "is a file",
            expected="a dump folder (rank folder, rankN folders or stepN folders)",
        )
    try:
        with os.scandir(path) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except PermissionError:
        raise LayoutError(path, "permission denied (cannot list the folder)") from None
    except OSError as error:
        raise LayoutError(path, f"cannot list the folder: {error.strerror or error}") from None


def _is_rank_folder(entries: list[os.DirEntry[str]]) -> bool:
    names = {entry.name for entry in entries}
    return bool(names & set(DUMP_FILES)) or TENSOR_DIR in names


def _check_rank_folder(path: Path) -> None:
    missing = [name for name in DUMP_FILES if not (path / name).is_file()]
    for name in missing:
        _refuse_loop(path / name)
    if missing:
        present = [name for name in DUMP_FILES if name not in missing]
        raise LayoutError(
            path,
            f"missing {', '.join(missing)}" + (f" (found {', '.join(present)})" if present else ""),
            expected="construct.json, dump.json and stack.json in every rank folder",
        )


def _number_from_name(name: str, pattern: re.Pattern[str]) -> int | None:
    match = pattern.match(name)
    if match is None:
        return None
    digits = match.group(1)
    return int(digits) if digits else 0


def _rank_dirs(step_path: Path, step: int, warnings: list[str]) -> list[RankDir]:
    """The rank folders of one step folder (which may itself be a rank folder)."""
    entries = _entries(step_path)
    if _is_rank_folder(entries):
        _check_rank_folder(step_path)
        return [RankDir(step, 0, step_path)]
    ranks: dict[int, Path] = {}
    procs: list[Path] = []
    for entry in entries:
        rank = _number_from_name(entry.name, _RANK) if _is_dir(entry) else None
        if rank is not None:
            if rank in ranks:
                raise LayoutError(
                    step_path, f"both {ranks[rank].name} and {entry.name} claim rank {rank}"
                )
            ranks[rank] = Path(entry.path)
        elif _is_dir(entry) and _PROC.match(entry.name):
            procs.append(Path(entry.path))
        else:
            warnings.append(f"{entry.path}: not a rankN folder, skipped")
    if not ranks and procs:
        if len(procs) > 1:
            raise LayoutError(
                step_path,
                f"{len(procs)} proc<pid> folders ({', '.join(p.name for p in procs)})",
                expected="one proc<pid> folder (a non-distributed run) or rankN folders",
            )
        ranks[0] = procs[0]
    elif procs:
        warnings.extend(f"{p}: proc<pid> folder beside rankN folders, skipped" for p in procs)
    if not ranks:
        raise _unrecognised(step_path, entries)
    result = []
    for rank, path in sorted(ranks.items()):
        _check_rank_folder(path)
        result.append(RankDir(step, rank, path))
    return result


def _unrecognised(path: Path, entries: list[os.DirEntry[str]]) -> LayoutError:
    if not entries:
        return LayoutError(path, "folder is empty", expected="a dump folder written by msprobe")
    shown = ", ".join(entry.name for entry in entries[:5]) + (" ..." if len(entries) > 5 else "")
    return LayoutError(
        path,
        f"no dump found (contains {shown})",
        expected="construct.json/dump.json/stack.json, rankN (or proc<pid>) folders, or stepN folders",
    )


def _infer_numbers(path: Path) -> tuple[int, int]:
    """Step and rank of a single rank folder, read from its own and its parent's names."""
    rank = _number_from_name(path.name, _RANK)
    step = _number_from_name(path.parent.name, _STEP)
    return (step or 0), (rank or 0)


def discover(path: str | Path) -> DumpLayout:
    """Classify ``path`` and list its (step, rank) folders, sorted by number."""
    root = Path(path)
    entries = _entries(root)
    warnings: list[str] = []
    if _is_rank_folder(entries):
        _check_rank_folder(root)
        step, rank = _infer_numbers(root.resolve())
        return DumpLayout(root, LayoutKind.RANK, [RankDir(step, rank, root)], warnings)
    steps = {}
    for entry in entries:
        number = _number_from_name(entry.name, _STEP) if _is_dir(entry) else None
        if number is not None:
            steps[number] = Path(entry.path)
    if steps:
        ranks: list[RankDir] = []
        for entry in entries:
            if not (_is_dir(entry) and _STEP.match(entry.name)):
                warnings.append(f"{entry.path}: not a stepN folder, skipped")
        for number, step_path in sorted(steps.items()):
            ranks.extend(_rank_dirs(step_path, number, warnings))
        return DumpLayout(root, LayoutKind.STEPS, ranks, warnings)
    step = _number_from_name(root.resolve().name, _STEP) or 0
    has_ranks = any(
        _is_dir(entry) and (_RANK.match(entry.name) or _PROC.match(entry.name)) for entry in entries
    )
    if not has_ranks:
        raise _unrecognised(root, entries)
    return DumpLayout(root, LayoutKind.RANKS, _rank_dirs(root, step, warnings), warnings)
