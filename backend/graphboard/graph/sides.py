"""The two sides of a comparison: the target (-tp) and the golden (-gp).

Code speaks of target and golden; msprobe's files spell them ``NPU`` and ``Bench`` (the
``data_source`` column of tb_nodes), so those words appear only where that format is read or
written, through :attr:`Side.data_source` and :meth:`Side.from_data_source`. What graphboard
says to people and clients (API answers, messages, viewer links) spells a side
``target``/``golden`` through :func:`spoken`.
"""

from __future__ import annotations

from enum import Enum


class Side(Enum):
    TARGET = "target"
    GOLDEN = "golden"

    @property
    def other(self) -> Side:
        """The side this one is compared with."""
        return Side.GOLDEN if self is Side.TARGET else Side.TARGET

    @property
    def data_source(self) -> str:
        """msprobe's word for this side in tb_nodes.data_source and its graph keys."""
        return _DATA_SOURCE[self]

    @classmethod
    def from_data_source(cls, value: str) -> Side:
        """The side msprobe's ``NPU``/``Bench`` names; a one-line error for anything else."""
        found = _BY_DATA_SOURCE.get(value)
        if found is None:
            raise ValueError(f"data_source {value!r}: expected 'NPU' or 'Bench'")
        return found

    @classmethod
    def parse(cls, value: str) -> Side:
        """A side as the API accepts it: ``target``/``golden``, or msprobe's ``NPU``/``Bench``."""
        found = _BY_NAME.get(value)
        if found is None:
            raise ValueError(f"side {value!r}: expected target, golden, NPU or Bench")
        return found


_DATA_SOURCE = {Side.TARGET: "NPU", Side.GOLDEN: "Bench"}
_BY_DATA_SOURCE = {source: side for side, source in _DATA_SOURCE.items()}
_BY_NAME = {**{side.value: side for side in Side}, **_BY_DATA_SOURCE}


def spoken(value: str) -> str:
    """A side as answers and messages spell it: ``target``/``golden`` for any name
    :meth:`Side.parse` knows (a graph key's ``NPU``/``Bench`` included); anything else as it is,
    so a file whose data_source is neither is still listed rather than refused."""
    found = _BY_NAME.get(value)
    return found.value if found is not None else value
