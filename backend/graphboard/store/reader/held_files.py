"""Reading a .vis.db's header bytes without dropping SQLite's locks on it.

SQLite locks a database with POSIX advisory locks (``fcntl``), which belong to the process
and the file (the inode), not to a descriptor: closing ANY descriptor of the file releases
every lock the process holds on it (SQLite's "How To Corrupt An SQLite Database File",
section 2.2). A plain ``open(path).read(100)`` then ``close()`` while a connection of the
same process (this thread's or another request's) is inside a write transaction drops that
transaction's locks; another process then writes the same pages, and the file is corrupt.

So the header is read with ``pread`` on one descriptor per file that the process keeps open
for as long as any of its connections to that file is: :func:`hold` before the connection
opens, :func:`release` after it closes. The last release closes the descriptor, when no
connection of this process to the file is left to lose a lock. This is the rule SQLite's own
unix VFS applies to its descriptors (a close is deferred while the inode is locked); every
connection to a user's .vis.db goes through :func:`graphboard.store.reader.opening.connect`,
which holds the file this way.

Limits: a connection to the same file opened by other code in this process (not through
``connect``) is not counted; graphboard opens none.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from graphboard.errors import StoreError

_FileKey = tuple[int, int]  # st_dev, st_ino


@dataclass
class _Held:
    fd: int
    users: int = 0
    # Descriptors opened when a path's file changed between stat and open, onto a file held
    # already: closing one would drop that file's locks, so they close with the first.
    spare: list[int] = field(default_factory=list)


_held: dict[_FileKey, _Held] = {}
_guard = threading.Lock()


@dataclass(frozen=True)
class HeldFile:
    """One user's hold on a file: the descriptor to read it through, until released."""

    path: Path
    key: _FileKey
    fd: int

    def read(self, size: int, offset: int = 0) -> bytes:
        try:
            return os.pread(self.fd, size, offset)
        except OSError as error:
            raise StoreError(f"{self.path.name}: cannot read: {error.strerror or error}") from None

    def stat(self) -> os.stat_result:
        return os.fstat(self.fd)


def _key(status: os.stat_result) -> _FileKey:
    return status.st_dev, status.st_ino


def hold(path: Path) -> HeldFile:
    """Hold ``path``'s file open (shared with this process's other holders of it)."""
    with _guard:
        try:
            held = _held.get(_key(path.stat()))
            if held is None:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
                key = _key(os.fstat(fd))
                held = _held.get(key)
                if held is None:
                    held = _held[key] = _Held(fd)
                else:  # the path moved onto a file held already: never close it alone
                    held.spare.append(fd)
        except OSError as error:
            raise StoreError(f"{path.name}: cannot open: {error.strerror or error}") from None
        held.users += 1
        return HeldFile(path, _key(os.fstat(held.fd)), held.fd)


def release(handle: HeldFile) -> None:
    """End one hold; the last one closes the descriptor. Call it after the connection that
    the hold covered is closed."""
    with _guard:
        held = _held[handle.key]
        held.users -= 1
        if held.users == 0:
            del _held[handle.key]
            for fd in (held.fd, *held.spare):
                os.close(fd)


def held_count() -> int:
    """Files this process holds open now (for tests: zero once every connection closed)."""
    with _guard:
        return len(_held)
