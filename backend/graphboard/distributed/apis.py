"""The API table: which family each ``torch.distributed`` call belongs to and where it names
its peer or root."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, NamedTuple


class Family(StrEnum):
    """A StrEnum: hashed as its text, which hot dict lookups need (an Enum hashes in Python)."""

    SEND = "send"
    RECV = "recv"
    ONE_TO_MANY = "one_to_many"  # the root sends to every member
    MANY_TO_ONE = "many_to_one"  # every member sends to the root
    MANY_TO_MANY = "many_to_many"
    BATCH = "batch"


class RootArg(NamedTuple):
    """Where a call names its peer or root: keyword, position among the inputs, default."""

    name: str
    position: int
    default: int | None = None


P2P_FAMILIES = (Family.SEND, Family.RECV, Family.BATCH)
P2P_KINDS = {Family.SEND: "send", Family.RECV: "receive"}
# (kind of the root, kind of the other members) in msprobe's communications_type terms
ROOTED_KINDS = {Family.ONE_TO_MANY: ("send", "receive"), Family.MANY_TO_ONE: ("receive", "send")}

FAMILIES: dict[str, tuple[Family, RootArg | None]] = {
    "send": (Family.SEND, RootArg("dst", 1)),
    "isend": (Family.SEND, RootArg("dst", 1)),
    "recv": (Family.RECV, RootArg("src", 1)),
    "irecv": (Family.RECV, RootArg("src", 1)),
    "broadcast": (Family.ONE_TO_MANY, RootArg("src", 1)),
    "broadcast_object_list": (Family.ONE_TO_MANY, RootArg("src", 1, 0)),
    "scatter": (Family.ONE_TO_MANY, RootArg("src", 2, 0)),
    "scatter_object_list": (Family.ONE_TO_MANY, RootArg("src", 2, 0)),
    "gather": (Family.MANY_TO_ONE, RootArg("dst", 2, 0)),
    "gather_object": (Family.MANY_TO_ONE, RootArg("dst", 2, 0)),
    "reduce": (Family.MANY_TO_ONE, RootArg("dst", 1)),
    "batch_isend_irecv": (Family.BATCH, None),
}


def family_of(api: str) -> tuple[Family, RootArg | None]:
    """Anything not listed is many↔many, as in msprobe (all_reduce, all_gather, barrier ...)."""
    return FAMILIES.get(api, (Family.MANY_TO_MANY, None))


P2P_OP = re.compile(r"isend|irecv|send|recv")


def batch_op(op: dict[str, Any]) -> tuple[str, Family] | None:
    """(``isend``/``irecv``, SEND/RECV) of one P2POp of a batch; msprobe may write a repr."""
    found = P2P_OP.search(str(op.get("op")))
    if found is None:
        return None
    api = found.group(0)
    return api, Family.SEND if api.endswith("send") else Family.RECV
