"""Opening a .vis.db: read-only by default, never creating files beside the user's.

Reading connections are read-only (``mode=ro``, ``query_only``): viewing never writes to the
user's file and never creates ``-wal``/``-shm`` files beside it (a WAL-mode file without a
``-wal`` is opened ``immutable``, which needs neither). A file msprobe wrote has no ``gb_*``
columns: they are derived once into a cache file (:mod:`graphboard.store.msprobe_columns`).

Nothing here opens the file but SQLite: its header (WAL or not, the change counter) is read
through the descriptor a connection holds (:mod:`graphboard.store.reader.held_files`), since
closing any other descriptor of the file would drop this process's locks on it.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from enum import StrEnum
from pathlib import Path

from graphboard.dump.records import Param
from graphboard.errors import StoreError
from graphboard.store import matches, msprobe_columns
from graphboard.store.graph_views import FileIdentity, file_identity
from graphboard.store.reader.config import FileConfig, read_config
from graphboard.store.reader.held_files import HeldFile, hold, release

_SQLITE_HEADER = b"SQLite format 3\x00"
# How long a statement waits for another connection's lock (SQLite's busy handler) before it
# fails with "database is locked": a matching write holds the lock for milliseconds, a
# suggest-matches --apply import for well under a second; ten seconds bounds the wait.
BUSY_SECONDS = 10.0
_WAL_VERSION = 2


class Source(StrEnum):
    GRAPHBOARD = "graphboard"  # written by graph_build: gb_* tables inside
    MSPROBE = "msprobe"  # tb_* only: gb_* columns come from a derived file


class HeldConnection(sqlite3.Connection):
    """A connection to a .vis.db that holds the file open (:mod:`.held_files`) until it is
    closed: the file's header is read through that hold, never by opening the file again."""

    held: HeldFile

    def close(self) -> None:
        super().close()
        held = self.__dict__.pop("held", None)
        if held is not None:
            release(held)


def _is_wal(path: Path, header: bytes) -> bool:
    if len(header) < 20 or not header.startswith(_SQLITE_HEADER):
        raise StoreError(f"{path.name}: not an SQLite database")
    return header[18] == _WAL_VERSION


def connect(path: Path, *, writable: bool = False) -> HeldConnection:
    """A connection to a .vis.db: read-only unless ``writable`` (manual matching)."""
    held = hold(path)  # before the connection: its header is read through this hold
    try:
        conn = _connect(path, held, writable)
    except BaseException:
        release(held)
        raise
    conn.held = held
    return conn


def _connect(path: Path, held: HeldFile, writable: bool) -> HeldConnection:
    uri = path.resolve().as_uri()
    wal = _is_wal(path, held.read(100))
    if writable:
        uri += "?mode=rw"
    else:
        uri += "?mode=ro"
        if wal and not path.with_name(path.name + "-wal").exists():
            # Nobody is writing (no -wal): read it as a plain file, creating no -shm.
            uri += "&immutable=1"
    try:
        conn = sqlite3.connect(
            uri,
            uri=True,
            timeout=BUSY_SECONDS,
            isolation_level=None,
            check_same_thread=False,
            factory=HeldConnection,
        )
    except sqlite3.Error as error:
        raise StoreError(f"{path.name}: cannot open: {error}") from None
    if not writable:
        conn.execute("PRAGMA query_only = 1")
        conn.execute("PRAGMA mmap_size = 268435456")
    return conn


def table_names(conn: sqlite3.Connection) -> set[str]:
    """Names of the file's tables and views."""
    return {
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM main.sqlite_master WHERE type IN ('table', 'view')"
        )
    }


class VisDb:
    """A .vis.db's connection, what kind of file it is, and where its derived columns are.
    The connection is this object's: :meth:`close` closes it. It holds no request state:
    every read is a function of the reader's modules taking it (and a rule set) as
    arguments; what it keeps is the file's own, read once (its config, a few decoded
    gb_params rows)."""

    def __init__(self, path: Path, conn: HeldConnection, cache_dir: Path) -> None:
        self.path = path
        self.conn = conn
        self.cache_dir = cache_dir
        self.identity: FileIdentity = self._identity()
        tables = table_names(conn)
        if not {"tb_nodes", "tb_config"} <= tables:
            raise StoreError(f"{path.name}: not a .vis.db (no tb_nodes / tb_config table)")
        self.source = Source.GRAPHBOARD if "gb_arrays" in tables else Source.MSPROBE
        self.columns_file_path: Path | None = None
        self._columns_file: sqlite3.Connection | None = None
        # gb_peer_links (a view: one row per node and peer, collectives included) replaced
        # reading gb_links directly; files built before it only have gb_links.
        self.links_source = next(
            (name for name in ("gb_peer_links", "gb_links") if name in tables), None
        )
        self.has_overlay = matches.OVERLAY_TABLE in tables
        # Set by a committed matching write on an msprobe file: the columns derived before
        # it, still right (only gb_* tables changed), to carry over to the file's new stamp.
        self.derived_before_write: Path | None = None
        self._config: FileConfig | None = None
        # Per open file, for node_data: whether the file keeps typed parameters (gb_params),
        # and the last few gb_params rows decoded (see node_data._decoded_row).
        self.typed_params: bool | None = None
        self.param_rows: OrderedDict[tuple[str, int], dict[int, list[Param]]] = OrderedDict()

    def close(self) -> None:
        if self._columns_file is not None:
            self._columns_file.close()
            self._columns_file = None
        self.conn.close()
        if self.derived_before_write is not None:
            # after the close: a WAL file's checkpoint on close changes its stamp again
            msprobe_columns.restamp(self.derived_before_write, self.path, self.cache_dir)
            self.derived_before_write = None

    def refresh(self) -> None:
        """Re-read the file's identity and tables (after this connection wrote to it)."""
        self.identity = self._identity()
        self.has_overlay = matches.OVERLAY_TABLE in table_names(self.conn)

    def _identity(self) -> FileIdentity:
        held = self.conn.held
        return file_identity(self.path, held.stat(), held.read(100))

    def config(self) -> FileConfig:
        """The file's ``tb_config``, read once."""
        if self._config is None:
            self._config = read_config(self.conn, self.path.name)
        return self._config

    @property
    def writable(self) -> bool:
        return not self.conn.execute("PRAGMA query_only").fetchone()[0]

    def ensure_derived(self) -> Path | None:
        """Derive an msprobe file's columns now (its derived columns file's path); None for our own files."""
        self.gb_conn()
        return self.columns_file_path

    def gb_conn(self) -> sqlite3.Connection:
        """Where ``gb_graphs`` / ``gb_arrays`` are: the file itself or its derived columns file."""
        if self.source is Source.GRAPHBOARD:
            return self.conn
        if self._columns_file is None:
            self.columns_file_path = msprobe_columns.ensure_columns_file(
                self.path, self.conn, self.cache_dir
            )
            self._columns_file = msprobe_columns.connect_columns_file(self.columns_file_path)
        return self._columns_file
