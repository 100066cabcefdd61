"""Per-graph columns as the reader serves them, cached in memory by file identity.

A :class:`GraphView` is a graph's ``gb_arrays`` columns with what changed since the build
applied: manual matches (graphboard's overlay) and rows msprobe's viewer re-matched in place
(``modified = 1``), with the roll-ups recomputed by the builder's own ``arrays.roll_up``.

Views are a cache, not state: the key is the file's identity (path, size, mtime, inode and
SQLite's change counter, which every committed write bumps), so a write simply makes new
views and old ones age out. The cache is bounded by the total number of nodes it holds.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from graphboard.store.arrays import NameTable
from graphboard.store.name_index import NameIndex

_CHANGE_COUNTER = slice(24, 28)  # SQLite header: bumped by every commit in rollback mode


@dataclass(frozen=True, slots=True)
class GraphKey:
    """One graph of a file: a side, a step and a rank. ``side`` is the graph's key in msprobe's
    tables (tb_nodes.data_source: ``NPU`` / ``Bench``, :attr:`graph.sides.Side.data_source`);
    what the API and messages show goes through :func:`graph.sides.spoken`."""

    side: str
    step: int
    rank: int

    @property
    def graph_id(self) -> str:
        return f"{self.side}_{self.step}_{self.rank}"


@dataclass(frozen=True, slots=True)
class FileIdentity:
    path: str
    size: int
    mtime_ns: int
    inode: int
    change_counter: int
    wal: tuple[int, int] | None  # size and mtime of a -wal file, if any


def file_identity(path: Path, status: os.stat_result, header: bytes) -> FileIdentity:
    """The identity of ``path``'s file as ``status`` and its first 100 bytes give it.

    The caller reads those through a descriptor it keeps open (see
    :mod:`graphboard.store.reader.held_files`): opening and closing the file here would drop
    the locks of this process's SQLite connections to it."""
    wal_path = path.with_name(path.name + "-wal")
    try:
        wal_status = wal_path.stat()
        wal: tuple[int, int] | None = (wal_status.st_size, wal_status.st_mtime_ns)
    except OSError:
        wal = None
    return FileIdentity(
        str(path.resolve()),
        status.st_size,
        status.st_mtime_ns,
        status.st_ino,
        int.from_bytes(header[_CHANGE_COUNTER], "big") if len(header) >= 28 else 0,
        wal,
    )


@dataclass(slots=True, eq=False)
class GraphView:
    key: GraphKey
    load_names: Callable[[], Sequence[str]]  # names by node_order, read on first use
    columns: dict[str, npt.NDArray[Any]]  # arrays.COLUMNS, by node_order
    compared: bool
    precision: dict[int, float | None] = field(default_factory=dict)  # changed since the build
    manual: frozenset[int] = frozenset()  # node orders a user (un)paired
    base_level: dict[int, int] = field(default_factory=dict)  # level before the change
    _names: Sequence[str] | None = None
    _exec_perm: npt.NDArray[Any] | None = None
    _name_index: NameIndex | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __len__(self) -> int:
        return len(self.columns["parent"])

    @property
    def names_loaded(self) -> bool:
        return self._names is not None

    @property
    def names(self) -> Sequence[str]:
        """Node names by node_order. Loaded lazily: a children page never needs them all."""
        if self._names is None:
            with self._lock:
                if self._names is None:
                    self._names = self.load_names()
        return self._names

    @property
    def exec_perm(self) -> npt.NDArray[Any]:
        """Node orders in execution order (``exec_perm[exec_order] == node_order``)."""
        if self._exec_perm is None:
            with self._lock:
                if self._exec_perm is None:
                    perm = np.empty(len(self), np.int32)
                    perm[self.columns["exec_order"]] = np.arange(len(self), dtype=np.int32)
                    self._exec_perm = perm
        return self._exec_perm

    @property
    def name_index(self) -> NameIndex:
        if self._name_index is None:
            perm = self.exec_perm
            with self._lock:
                if self._name_index is None:
                    names = self.names
                    if isinstance(names, NameTable):
                        names = names.as_list()
                    self._name_index = NameIndex([names[order] for order in perm])
        return self._name_index


Cached = TypeVar("Cached", bound=Sized)


class ViewCache(Generic[Cached]):
    """Least-recently-used views (or anything sized: the compare tables), holding at most
    ``max_nodes`` in all, each item weighing ``weigh(item)`` (its nodes by default; the
    compare tables weigh their bytes)."""

    def __init__(self, max_nodes: int, weigh: Callable[[Cached], int] = len) -> None:
        self.max_nodes = max_nodes
        self.weigh = weigh
        self._views: OrderedDict[tuple[Any, ...], Cached] = OrderedDict()
        self._nodes = 0
        self._lock = threading.Lock()
        self._loading: dict[tuple[Any, ...], threading.Lock] = defaultdict(threading.Lock)

    def get(self, key: tuple[Any, ...], load: Callable[[], Cached]) -> Cached:
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return view
            loading = self._loading[key]
        with loading:  # one load per key; other requests for it wait
            with self._lock:
                view = self._views.get(key)
                if view is not None:
                    return view
            view = load()
            with self._lock:
                self._views[key] = view
                self._nodes += self.weigh(view)
                while self._nodes > self.max_nodes and len(self._views) > 1:
                    _old_key, old = self._views.popitem(last=False)
                    self._nodes -= self.weigh(old)
                self._loading.pop(key, None)
        return view

    def clear(self) -> None:
        with self._lock:
            self._views.clear()
            self._nodes = 0


VIEWS: ViewCache[GraphView] = ViewCache(
    max_nodes=4_000_000
)  # create_app sets settings.view_cache_nodes
