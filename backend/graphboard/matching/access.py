"""Opening a .vis.db for one manual-matching write transaction, or saying why it cannot be."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from graphboard.refusals import Conflict, Forbidden, UnreadableFile
from graphboard.store.integrity import damage_unless_known, written_sound
from graphboard.store.reader import VisDb, WriteRefused, manual_matches, open_vis_db


class MatchingSettings(Protocol):
    """What manual matching reads of its caller's settings: the server passes its Settings, a
    command run on one file a :class:`FileSettings`."""

    @property
    def allow_matching(self) -> bool: ...

    @property
    def cache_dir(self) -> Path: ...  # where derived files of msprobe's .vis.db go

    @property
    def data_root(self) -> Path: ...  # the served folder: tensor paths stay inside it


@dataclass(frozen=True, slots=True)
class FileSettings:
    """The settings of a command run on one file (graphboard suggest-matches --apply,
    graph_build --auto-match): as ``graphboard serve --data-dir`` on the file's folder would
    have them, derived files in ``cache_dir``."""

    data_root: Path
    cache_dir: Path
    allow_matching: bool = True


def read_only_reason(path: Path) -> str | None:
    """Why ``path`` cannot take a write, or None. Write bits count even for root (who may
    write anyway): a user who made a file read-only meant it."""
    for item, what in ((path, "the file"), (path.parent, "the folder holding it")):
        mode = item.stat().st_mode
        if not os.access(item, os.W_OK) or not stat.S_IMODE(mode) & 0o222:
            if item == path:
                return f"{what} is read-only"
            return f"{what} is read-only (SQLite writes a journal file beside the database)"
    return None


@contextmanager
def writing(path: Path, settings: MatchingSettings) -> Iterator[VisDb]:
    """The file open for one write transaction, committed if the block succeeds."""
    if not settings.allow_matching:
        raise Forbidden("manual matching is turned off on this server", code="matching_disabled")
    reason = read_only_reason(path)
    if reason is not None:
        raise Forbidden(f"{path.name}: {reason}; manual matches cannot be saved", code="read_only")
    with open_vis_db(path, settings.cache_dir, writable=True) as db:
        if not db.config().compare:
            raise Conflict(
                f"{path.name} is a build of one run, not a compare: there is nothing to match",
                code="not_a_compare",
            )
        # before anything writes, even the first match's tables
        found = damage_unless_known(db.identity, db.conn)
        if found is not None:
            raise UnreadableFile(
                f"{path.name}: fails SQLite's integrity check ({found}); it takes no writes, "
                "as its reads fail: rebuild it or restore a copy",
                code="damaged_file",
            )
        try:
            with manual_matches.matching_write(db):
                yield db
        except WriteRefused as error:  # at its start, or a commit readers held off
            if error.busy:
                raise Conflict(str(error), code="busy") from None
            raise Forbidden(str(error), code="read_only") from None
    written_sound(path)  # reached only when the write committed, its connection closed
