"""Communication ops linked across ranks, and a check that the data sent is the data received.

After every (side, step, rank) graph is in the database, ``link_ranks`` pairs the
``Distributed.*`` nodes of one side (NPU or Bench) and one step across its ranks:

* Point-to-point (send, isend, recv, irecv, and each op of a batch_isend_irecv): the k-th
  message rank a sends to rank b pairs with the k-th message b receives from a. Blocking,
  non-blocking and batched calls share one sequence per (sender, receiver), which is how the
  communication libraries match them (msprobe keys send↔recv and isend↔irecv apart, so it
  cannot link an isend to a recv).
* Collectives: the k-th call of an API (forward and backward counted apart) in a process
  group pairs with the k-th call of it on every other member. A call without a ``group``
  argument runs on the default group: every rank of that side and step in the build (gloo
  dumps carry no group at all, which is why msprobe links none of them). One→many
  (broadcast, scatter) links the root to each member, many→one (gather, reduce) each member
  to the root, every other collective (all_reduce, all_gather, reduce_scatter, all_to_all,
  barrier ...) each member to every other.

Each link gets a verdict from the statistics in dump.json: a copy (send → recv, broadcast
root → member, all_gather contribution → its slot ...) must agree in dtype, shape, Max, Min,
Mean and Norm within ``COPY_RTOL``; a reduction must fit its contributions (SUM: the mean is
the sum of the means, Max/Min/Norm within the sums; MAX/MIN: the extreme) within a tolerance
of a few ulps of the dtype; what every member ends up holding (all_reduce) must agree across
members. Missing statistics make the verdict ``unknown``, never a mismatch.

Where it goes (the SQL is in ``graphboard.store.links``, the graph in ``graphboard.topology``):

* ``tb_nodes.matched_distributed``: msprobe's annotation, same format, so tb_graph_ascend
  shows our links: ``{"communications_type": "send"|"receive"|"send_receive", "nodes_info":
  {"<peer rank>": ["<peer precision_index, or overflow_level with -oc>", "<peer node>"]}}``,
  a list of those for a batch_isend_irecv linking several ops.
* ``gb_links``: one row per (node, peer) with the verdict and its reason, including peers
  that could not be found (``peer_node`` NULL).
* ``gb_comm_nodes``: the per-node flag. One row per communication node with its worst
  verdict (``mismatch`` when any of its links disagrees) and the reason; readers join it on
  (data_source, step, rank, node_name) like ``gb_nodes``. A table of its own rather than a
  ``gb_nodes`` column, because linking runs after the part files are merged and must leave
  the other tables as their writers made them.
* ``gb_topology`` / ``gb_topology_ranks``: which rank sends data to which, per side and step.

A peer rank absent from the dump, or group members that disagree on how often they called an
API, produce a warning that names them and unlinked rows, never an exception. Pairing costs a
few dict operations per call: linear in the number of communication nodes, plus one link per
pair of members of each collective call (what msprobe's annotation lists anyway).
"""

from __future__ import annotations

import gc
import json
import math
import re
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from itertools import zip_longest
from typing import Any, NamedTuple

from graphboard.dump.records import Param, Role
from graphboard.graph.model import Graph
from graphboard.store.links import Annotation, CommNodeRow, LinkRow, node_id, write_links
from graphboard.topology import Transfer, build_topologies, topology_counts, topology_rows

DISTRIBUTED_PREFIX = "Distributed."
DEFAULT_GROUP = "default"
P2P_GROUP = "p2p"
MISSING_INDEX = "Nan"  # msprobe's text for a peer without precision_index / overflow_level
MAX_WARNINGS_PER_KIND = 20

# A copy is bit-identical: the slack only absorbs statistics summed in another order.
COPY_RTOL = 1e-5
# A reduction rounds in the tensor's dtype: allow a few ulps of it, and never less than 1e-4.
_DTYPE_EPS = {"float64": 2.2e-16, "float32": 1.2e-7, "float16": 9.8e-4, "bfloat16": 7.8e-3}
_MIN_REDUCE_RTOL = 1e-4

# Role values as plain strings: formatting a StrEnum member runs Python code, per lookup
INPUT, OUTPUT = Role.INPUT.value, Role.OUTPUT.value

StepKey = tuple[str, int]  # (side, step)
Channel = tuple[str, int, int, int]  # (side, step, sender rank, receiver rank)
InstanceKey = tuple[str, int, str, str, str, int]  # side, step, group, API, direction, call #


# ================================================================ public types


@dataclass(slots=True)
class CommNode:
    """What the linker needs of one ``Distributed.*`` node, small enough to pass between processes."""

    side: str
    step: int
    rank: int
    name: str
    order: int
    params: list[Param]
    precision: float | None
    overflow: str | None
    batch_p2p: list[dict[str, Any]] | None = None  # {op, peer, group_id} per op of a batch


@dataclass(slots=True)
class LinkSummary:
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)


class Consistency(StrEnum):
    CONSISTENT = "consistent"
    MISMATCH = "mismatch"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Consistency
    reason: str | None = None


CONSISTENT = Verdict(Consistency.CONSISTENT)


def _unknown(reason: str) -> Verdict:
    return Verdict(Consistency.UNKNOWN, reason)


def _mismatch(reason: str) -> Verdict:
    return Verdict(Consistency.MISMATCH, reason)


def combine(verdicts: Iterable[Verdict]) -> Verdict:
    """Any mismatch wins; otherwise consistent if anything at all could be checked."""
    consistent: Verdict | None = None
    unknown: Verdict | None = None
    for verdict in verdicts:
        if verdict.status is Consistency.MISMATCH:
            return verdict
        if verdict.status is Consistency.CONSISTENT:
            consistent = consistent or verdict
        else:
            unknown = unknown or verdict
    return consistent or unknown or _unknown("nothing to check")


def collect_comm_nodes(graph: Graph) -> list[CommNode]:
    return [
        CommNode(
            graph.side,
            graph.step,
            graph.rank,
            node.name,
            node.order,
            node.params or [],
            node.precision,
            node.overflow,
            node.batch_p2p,
        )
        for node in graph.nodes.values()
        if node.name.startswith(DISTRIBUTED_PREFIX)
    ]


# ================================================================ the API table


class Family(Enum):
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


_P2P_FAMILIES = (Family.SEND, Family.RECV, Family.BATCH)
_P2P_KINDS = {Family.SEND: "send", Family.RECV: "receive"}
# (kind of the root, kind of the other members) in msprobe's communications_type terms
_ROOTED_KINDS = {Family.ONE_TO_MANY: ("send", "receive"), Family.MANY_TO_ONE: ("receive", "send")}

_FAMILIES: dict[str, tuple[Family, RootArg | None]] = {
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
    return _FAMILIES.get(api, (Family.MANY_TO_MANY, None))


# ================================================================ reading a call


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


@dataclass(frozen=True, slots=True)
class TensorStats:
    dtype: str | None
    shape: tuple[Any, ...] | None
    max: float | None
    min: float | None
    mean: float | None
    norm: float | None

    @classmethod
    def of_param(cls, param: Param | None) -> TensorStats | None:
        if param is None:
            return None
        if param.is_tensor:
            return cls(
                param.dtype,
                param.shape,
                _as_float(param.max),
                _as_float(param.min),
                _as_float(param.mean),
                _as_float(param.norm),
            )
        nested = (param.extra or {}).get("tensor")  # a P2POp leaf keeps its tensor raw
        return cls.of_leaf(nested) if isinstance(nested, dict) else None

    @classmethod
    def of_leaf(cls, leaf: dict[str, Any]) -> TensorStats | None:
        if "dtype" not in leaf and "shape" not in leaf:
            return None
        shape = leaf.get("shape")
        return cls(
            leaf.get("dtype"),
            tuple(shape) if isinstance(shape, list) else None,
            _as_float(leaf.get("Max")),
            _as_float(leaf.get("Min")),
            _as_float(leaf.get("Mean")),
            _as_float(leaf.get("Norm")),
        )

    @property
    def numel(self) -> int | None:
        if self.shape is None or not all(isinstance(size, int) for size in self.shape):
            return None
        return math.prod(self.shape)

    @property
    def scale(self) -> float:
        """Largest finite magnitude: what an absolute tolerance is relative to."""
        values = (abs(value) for value in (self.max, self.min) if value is not None)
        return max((value for value in values if math.isfinite(value)), default=0.0)


_REDUCE_OP = re.compile(r"\b(SUM|AVG|PRODUCT|MIN|MAX|BAND|BOR|BXOR|PREMUL_SUM)\b")
_P2P_OP = re.compile(r"isend|irecv|send|recv")


def _batch_op(op: dict[str, Any]) -> tuple[str, Family] | None:
    """(``isend``/``irecv``, SEND/RECV) of one P2POp of a batch; msprobe may write a repr."""
    found = _P2P_OP.search(str(op.get("op")))
    if found is None:
        return None
    api = found.group(0)
    return api, Family.SEND if api.endswith("send") else Family.RECV


def _group_ranks(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):  # msprobe sometimes writes the list as a JSON string
        try:
            value = json.loads(value)
        except ValueError:
            return ()
    if not isinstance(value, list):
        return ()
    return tuple(rank for rank in (_as_int(item) for item in value) if rank is not None)


@dataclass(slots=True)
class _Call:
    """One communication node: its parameters indexed by key, its API and group resolved."""

    node: CommNode
    api: str
    direction: str
    family: Family
    root_arg: RootArg | None
    params: dict[str, Param]
    group_key: str
    members: tuple[int, ...] | None  # None: the default group
    endpoint: Endpoint  # this call as one end of its links (a batch has one per inner op)

    @classmethod
    def of(cls, node: CommNode) -> _Call:
        parts = node.name.split(".")
        api = parts[1] if len(parts) > 1 else node.name
        direction = parts[-1] if parts[-1] in ("forward", "backward") else ""
        family, root_arg = family_of(api)
        group_key, members = DEFAULT_GROUP, None
        for param in node.params:
            if param.role is Role.INPUT and param.extra and "group_ranks" in param.extra:
                members = _group_ranks(param.extra["group_ranks"])
                group_id = param.extra.get("group_id")
                group_key = str(group_id) if group_id is not None else f"ranks{list(members)}"
                break
        params = {param.key: param for param in node.params}
        endpoint = Endpoint(node.rank, node, api)
        return cls(node, api, direction, family, root_arg, params, group_key, members, endpoint)

    def arg(self, role: str, position: int, name: str | None = None) -> Param | None:
        found = self.params.get(f"{role}.{position}")
        if found is None and name is not None:
            found = self.params.get(f"{role}.{name}")
        return found

    def tensor(self, role: str, position: int, name: str | None = None) -> TensorStats | None:
        return TensorStats.of_param(self.arg(role, position, name))

    def tensor_list(self, role: str, position: int) -> list[TensorStats | None]:
        """The tensors of a list argument (``output.0.0``, ``output.0.1`` ...), in order."""
        items: list[TensorStats | None] = []
        while (param := self.params.get(f"{role}.{position}.{len(items)}")) is not None:
            items.append(TensorStats.of_param(param))
        return items

    def rank_arg(self) -> int | None:
        """The global peer/root rank: ``src``/``dst``, or ``group_src``/``group_dst`` mapped."""
        spec = self.root_arg
        if spec is None:
            return None
        param = self.arg(INPUT, spec.position, spec.name)
        if param is not None and (rank := _as_int(param.value)) is not None:
            return rank
        local = self.params.get(f"input.group_{spec.name}")
        if local is not None and self.members and (index := _as_int(local.value)) is not None:
            return self.members[index] if 0 <= index < len(self.members) else None
        return spec.default

    def reduce_op(self) -> str:
        for param in self.node.params:
            if param.role is Role.INPUT and (param.type or "").endswith("ReduceOp"):
                found = _REDUCE_OP.search(str(param.value))
                if found:
                    return found.group(1)
        return "SUM"  # torch's default

    def kind(self) -> str:
        """This node's msprobe communications_type."""
        if self.family in _P2P_KINDS:
            return _P2P_KINDS[self.family]
        if self.family is Family.BATCH:
            ops = self.node.batch_p2p or []
            kinds = {_P2P_KINDS[parsed[1]] for op in ops if (parsed := _batch_op(op))}
            return kinds.pop() if len(kinds) == 1 else "send_receive"
        if self.family in _ROOTED_KINDS:
            root_kind, member_kind = _ROOTED_KINDS[self.family]
            return root_kind if self.rank_arg() == self.node.rank else member_kind
        return "send_receive"


# ================================================================ checking the data


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _slack(a: float, b: float, rtol: float, scale: float) -> float:
    return rtol * max(abs(a), abs(b), scale)


def _agree(
    label: str, expected: float | None, actual: float | None, rtol: float, scale: float
) -> Verdict:
    if expected is None or actual is None:
        return _unknown(f"{label} missing")
    if math.isnan(expected) or math.isnan(actual):
        same = math.isnan(expected) and math.isnan(actual)  # NaN faithfully carried over
    elif math.isinf(expected) or math.isinf(actual):
        same = expected == actual
    else:
        same = abs(expected - actual) <= _slack(expected, actual, rtol, scale)
    return CONSISTENT if same else _mismatch(f"{label} {_fmt(actual)}, expected {_fmt(expected)}")


def _within(
    label: str, value: float | None, limit: float | None, upper: bool, rtol: float, scale: float
) -> Verdict:
    """``value <= limit`` (``upper``) or ``value >= limit``, with the same slack as ``_agree``."""
    if value is None or limit is None or math.isnan(value) or math.isnan(limit):
        return _unknown(f"{label} missing")
    slack = _slack(value, limit, rtol, scale)
    inside = value <= limit + slack if upper else value >= limit - slack
    if inside:
        return CONSISTENT
    return _mismatch(f"{label} {_fmt(value)} {'above' if upper else 'below'} {_fmt(limit)}")


def _reduce_rtol(dtype: str | None) -> float:
    return max(_MIN_REDUCE_RTOL, 8 * _DTYPE_EPS.get((dtype or "").rsplit(".", 1)[-1], 0.0))


def _fields(
    expected: TensorStats, actual: TensorStats
) -> Iterator[tuple[str, float | None, float | None]]:
    yield "Max", expected.max, actual.max
    yield "Min", expected.min, actual.min
    yield "Mean", expected.mean, actual.mean
    yield "Norm", expected.norm, actual.norm


def compare_copy(
    sent: TensorStats | None, received: TensorStats | None, what: str = "received"
) -> Verdict:
    """A tensor copied from one rank to another: its statistics must agree."""
    if sent is None or received is None:
        return _unknown(f"no statistics for the {'sent' if sent is None else what} tensor")
    if sent == received:  # a faithful copy has the very same statistics: skip the arithmetic
        return CONSISTENT
    if sent.dtype and received.dtype and sent.dtype != received.dtype:
        return _mismatch(f"{what} dtype {received.dtype}, sent {sent.dtype}")
    if sent.shape is not None and received.shape is not None and sent.shape != received.shape:
        return _mismatch(f"{what} shape {list(received.shape)}, sent {list(sent.shape)}")
    scale = max(sent.scale, received.scale)
    return combine(
        _agree(f"{what} {label}", want, got, COPY_RTOL, scale)
        for label, want, got in _fields(sent, received)
    )


def _known(values: Iterable[float | None]) -> list[float] | None:
    """The values, or None if any is missing: a statistic over part of the data misleads."""
    out: list[float] = []
    for value in values:
        if value is None:
            return None
        out.append(value)
    return out


def _pooled(parts: Sequence[TensorStats | None]) -> TensorStats | None:
    """The statistics of the concatenation of ``parts`` (exact for Max, Min, Mean and Norm)."""
    known = [part for part in parts if part is not None]
    sizes = _known(None if part.numel is None else float(part.numel) for part in known)
    if not known or len(known) != len(parts) or sizes is None or not sum(sizes):
        return None
    maxima = _known(part.max for part in known)
    minima = _known(part.min for part in known)
    means = _known(part.mean for part in known)
    norms = _known(part.norm for part in known)
    total = sum(sizes)
    return TensorStats(
        known[0].dtype,
        (int(total),),
        max(maxima) if maxima else None,
        min(minima) if minima else None,
        sum(m * n for m, n in zip(means, sizes, strict=True)) / total if means else None,
        math.sqrt(sum(n * n for n in norms)) if norms else None,
    )


def _compare_pooled(expected: TensorStats | None, actual: TensorStats | None, what: str) -> Verdict:
    if expected is None or actual is None:
        return _unknown(f"no statistics to check the {what}")
    if expected.numel is not None and actual.numel is not None and expected.numel != actual.numel:
        return _mismatch(f"{what} has {actual.numel} elements, expected {expected.numel}")
    rtol = _reduce_rtol(actual.dtype)
    scale = max(expected.scale, actual.scale)
    return combine(
        _agree(f"{what} {label}", want, got, rtol, scale)
        for label, want, got in _fields(expected, actual)
    )


def check_reduction(
    result: TensorStats | None, parts: Sequence[TensorStats | None], op: str
) -> Verdict:
    """An elementwise reduction of ``parts`` with ``op``: what its statistics must satisfy."""
    known = [part for part in parts if part is not None]
    if result is None or not known or len(known) != len(parts):
        return _unknown("no statistics for the reduction")
    for part in known:
        if part.shape is not None and result.shape is not None and part.shape != result.shape:
            return _mismatch(
                f"result shape {list(result.shape)}, a contribution {list(part.shape)}"
            )
    rtol = _reduce_rtol(result.dtype)
    if op in ("SUM", "AVG"):
        divisor = 1 if op == "SUM" else len(known)
        scale = sum(part.scale for part in known) / divisor

        def total(values: Iterable[float | None]) -> float | None:
            found = _known(values)
            return sum(found) / divisor if found is not None else None

        return combine(
            [
                _agree(f"{op} Mean", total(p.mean for p in known), result.mean, rtol, scale),
                _within(f"{op} Max", result.max, total(p.max for p in known), True, rtol, scale),
                _within(f"{op} Min", result.min, total(p.min for p in known), False, rtol, scale),
                _within(f"{op} Norm", result.norm, total(p.norm for p in known), True, rtol, scale),
            ]
        )
    if op in ("MAX", "MIN"):
        # elementwise max: its Max is the largest Max, its Mean at least every Mean (MIN: mirror)
        is_max = op == "MAX"
        pick = max if is_max else min
        scale = max(part.scale for part in known)
        extremes = _known(p.max if is_max else p.min for p in known)
        means = _known(p.mean for p in known)
        return combine(
            [
                _agree(
                    f"{op} {'Max' if is_max else 'Min'}",
                    pick(extremes) if extremes else None,
                    result.max if is_max else result.min,
                    rtol,
                    scale,
                ),
                _within(
                    f"{op} Mean",
                    result.mean,
                    pick(means) if means else None,
                    not is_max,
                    rtol,
                    scale,
                ),
            ]
        )
    return _unknown(f"ReduceOp {op} cannot be checked from statistics")


# ================================================================ collective checks


@dataclass(slots=True)
class _Instance:
    """One collective call: the same (group, API, direction, occurrence) on every member."""

    side: str
    step: int
    api: str
    group_key: str
    occurrence: int
    members: tuple[int, ...]
    calls: dict[int, _Call]
    root: int | None = None

    @property
    def complete(self) -> bool:
        return len(self.calls) == len(self.members)

    @property
    def root_call(self) -> _Call | None:
        return self.calls.get(self.root) if self.root is not None else None

    def position(self) -> dict[int, int]:
        return {rank: index for index, rank in enumerate(self.members)}

    def each(self, read: Callable[[_Call], TensorStats | None]) -> dict[int, TensorStats | None]:
        return {rank: read(call) for rank, call in self.calls.items()}

    def all_members(self, read: Callable[[_Call], TensorStats | None]) -> list[TensorStats | None]:
        """``read`` of every member in group order; only meaningful when ``complete``."""
        return [read(self.calls[rank]) for rank in self.members]


@dataclass(slots=True)
class _Check:
    """A collective's verdicts: for the whole call, per member, and per (source, target)."""

    group: Verdict | None = None
    per_rank: dict[int, Verdict] = field(default_factory=dict)
    pair: Callable[[int, int], Verdict] | None = None
    uniform: Verdict | None = None  # the verdict of every pair, when one holds for all

    def verdict(self, source: int, target: int) -> Verdict:
        if self.uniform is not None:
            return self.uniform
        parts = [self.group, self.per_rank.get(source), self.per_rank.get(target)]
        found = [part for part in parts if part is not None]
        if self.pair is not None:
            found.append(self.pair(source, target))
        return combine(found)


def _slot(items: list[TensorStats | None] | None, index: int | None) -> TensorStats | None:
    if items is None or index is None or index >= len(items):
        return None
    return items[index]


def _incomplete(instance: _Instance) -> _Check:
    missing = [rank for rank in instance.members if rank not in instance.calls]
    return _Check(group=_unknown(f"rank(s) {_ranks_text(missing)} missing from the call"))


def _input(position: int, name: str) -> Callable[[_Call], TensorStats | None]:
    return lambda call: call.tensor(INPUT, position, name)


def _output(position: int, name: str) -> Callable[[_Call], TensorStats | None]:
    return lambda call: call.tensor(OUTPUT, position, name)


def _same_result(results: dict[int, TensorStats | None]) -> Callable[[int, int], Verdict]:
    return lambda a, b: compare_copy(results.get(a), results.get(b), f"rank {b} result")


def _check_all_reduce(instance: _Instance) -> _Check:
    results = instance.each(_output(0, "tensor"))
    if not instance.complete:
        check = _incomplete(instance)
        check.pair = _same_result(results)
        return check
    op = next(iter(instance.calls.values())).reduce_op()
    parts = instance.all_members(_input(0, "tensor"))
    distinct = set(results.values())
    if len(distinct) == 1:  # the normal case: one result, checked once, agreeing everywhere
        (result,) = distinct
        same = CONSISTENT if result is not None else _unknown("no statistics for the result")
        return _Check(uniform=combine([check_reduction(result, parts, op), same]))
    per_rank = {rank: check_reduction(result, parts, op) for rank, result in results.items()}
    return _Check(per_rank=per_rank, pair=_same_result(results))


def _check_reduce(instance: _Instance) -> _Check:
    root = instance.root_call
    if root is None or not instance.complete:
        return _incomplete(instance)
    parts = instance.all_members(_input(0, "tensor"))
    result = root.tensor(OUTPUT, 0, "tensor")
    return _Check(group=check_reduction(result, parts, root.reduce_op()))


def _check_broadcast(instance: _Instance) -> _Check:
    root = instance.root_call
    sent = root.tensor(INPUT, 0, "tensor") if root is not None else None
    received = instance.each(_output(0, "tensor"))
    return _Check(pair=lambda _root, member: compare_copy(sent, received.get(member)))


def _check_scatter(instance: _Instance) -> _Check:
    root = instance.root_call
    chunks = root.tensor_list(INPUT, 1) if root is not None else None
    received = instance.each(_output(0, "tensor"))
    position = instance.position()
    return _Check(
        pair=lambda _root, member: compare_copy(
            _slot(chunks, position.get(member)), received.get(member)
        )
    )


def _check_gather(instance: _Instance) -> _Check:
    root = instance.root_call
    gathered = root.tensor_list(OUTPUT, 1) if root is not None else None
    sent = instance.each(_input(0, "tensor"))
    position = instance.position()
    return _Check(
        pair=lambda member, _root: compare_copy(
            sent.get(member), _slot(gathered, position.get(member))
        )
    )


def _exchanged(
    sent: dict[int, list[TensorStats | None]],
    received: dict[int, list[TensorStats | None]],
    position: dict[int, int],
    a: int,
    b: int,
) -> Verdict:
    """What a put in b's slot arrived in a's slot on b, and the reverse (all_to_all)."""
    return combine(
        [
            compare_copy(_slot(sent.get(a), position[b]), _slot(received.get(b), position[a])),
            compare_copy(_slot(sent.get(b), position[a]), _slot(received.get(a), position[b])),
        ]
    )


def _check_all_gather(instance: _Instance) -> _Check:
    position = instance.position()
    # every slot of every member gets the contribution of that slot's owner
    contribution = instance.each(_input(1, "tensor"))
    sent = {rank: [stats] * len(instance.members) for rank, stats in contribution.items()}
    received = {rank: call.tensor_list(OUTPUT, 0) for rank, call in instance.calls.items()}
    return _Check(pair=lambda a, b: _exchanged(sent, received, position, a, b))


def _check_all_to_all(instance: _Instance) -> _Check:
    position = instance.position()
    sent = {rank: call.tensor_list(INPUT, 1) for rank, call in instance.calls.items()}
    received = {rank: call.tensor_list(OUTPUT, 0) for rank, call in instance.calls.items()}
    return _Check(pair=lambda a, b: _exchanged(sent, received, position, a, b))


def _check_all_gather_into_tensor(instance: _Instance) -> _Check:
    results = instance.each(_output(0, "output_tensor"))
    if not instance.complete:
        check = _incomplete(instance)
        check.pair = _same_result(results)
        return check
    expected = _pooled(instance.all_members(_input(1, "input_tensor")))
    per_rank = {rank: _compare_pooled(expected, got, "gathered") for rank, got in results.items()}
    return _Check(per_rank=per_rank, pair=_same_result(results))


def _check_reduce_scatter(instance: _Instance) -> _Check:
    if not instance.complete:
        return _incomplete(instance)
    op = next(iter(instance.calls.values())).reduce_op()
    chunks = {rank: call.tensor_list(INPUT, 1) for rank, call in instance.calls.items()}
    per_rank = {
        rank: check_reduction(
            instance.calls[rank].tensor(OUTPUT, 0, "output"),
            [_slot(chunks[member], index) for member in instance.members],
            op,
        )
        for index, rank in enumerate(instance.members)
    }
    return _Check(per_rank=per_rank)


def _check_reduce_scatter_tensor(instance: _Instance) -> _Check:
    """Chunks are not dumped one by one; totals over the group must still add up."""
    if not instance.complete:
        return _incomplete(instance)
    op = next(iter(instance.calls.values())).reduce_op()
    inputs = _pooled(instance.all_members(_input(1, "input")))
    outputs = _pooled(instance.all_members(_output(0, "output")))
    if inputs is None or outputs is None:
        return _Check(group=_unknown("no statistics for the reduce-scatter"))
    rtol = _reduce_rtol(outputs.dtype)
    if op in ("SUM", "AVG") and inputs.mean is not None and outputs.mean is not None:
        divisor = 1 if op == "SUM" else len(instance.members)
        expected = inputs.mean * (inputs.numel or 0) / divisor
        actual = outputs.mean * (outputs.numel or 0)
        scale = inputs.scale * (inputs.numel or 0)
        return _Check(group=_agree(f"{op} of all elements", expected, actual, rtol, scale))
    if op in ("MAX", "MIN"):
        want, got = (inputs.max, outputs.max) if op == "MAX" else (inputs.min, outputs.min)
        return _Check(group=_agree(f"{op} over the group", want, got, rtol, inputs.scale))
    return _Check(group=_unknown(f"ReduceOp {op} cannot be checked from statistics"))


def _check_all_to_all_single(instance: _Instance) -> _Check:
    """Splits are not in the statistics; the data the group holds must still be conserved."""
    if not instance.complete:
        return _incomplete(instance)
    inputs = _pooled(instance.all_members(_input(1, "input")))
    outputs = _pooled(instance.all_members(_output(0, "output")))
    return _Check(group=_compare_pooled(inputs, outputs, "exchanged data"))


def _check_no_data(instance: _Instance) -> _Check:
    return _Check(group=_unknown(f"{instance.api} carries no data"))


def _check_unsupported(instance: _Instance) -> _Check:
    return _Check(group=_unknown(f"no data check for {instance.api}"))


_CHECKS: dict[str, Callable[[_Instance], _Check]] = {
    "all_reduce": _check_all_reduce,
    "reduce": _check_reduce,
    "broadcast": _check_broadcast,
    "scatter": _check_scatter,
    "gather": _check_gather,
    "all_gather": _check_all_gather,
    "all_gather_into_tensor": _check_all_gather_into_tensor,
    "_all_gather_base": _check_all_gather_into_tensor,
    "reduce_scatter": _check_reduce_scatter,
    "reduce_scatter_tensor": _check_reduce_scatter_tensor,
    "_reduce_scatter_base": _check_reduce_scatter_tensor,
    "all_to_all": _check_all_to_all,
    "all_to_all_single": _check_all_to_all_single,
    "barrier": _check_no_data,
    "monitored_barrier": _check_no_data,
}


# ================================================================ pairing


@dataclass(slots=True)
class Endpoint:
    """One end of a link: a rank, and its call there if that was found."""

    rank: int
    node: CommNode | None
    api: str  # the call's API; the inner op (isend/irecv) for a batch
    op_index: int = 0  # inner op of a batch_isend_irecv


@dataclass(slots=True)
class Link:
    """Data going from ``source`` to ``target`` (both ways when ``mutual``)."""

    side: str
    step: int
    group_key: str
    occurrence: int
    source: Endpoint
    target: Endpoint
    mutual: bool
    verdict: Verdict

    @property
    def linked(self) -> bool:
        return self.source.node is not None and self.target.node is not None

    @property
    def api(self) -> str:
        return self.source.api if self.source.node is not None else self.target.api


class _P2PEnd(NamedTuple):
    endpoint: Endpoint
    payload: TensorStats | None  # what was sent, or what arrived


def _ranks_text(ranks: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2, 5, 7-8``: groups of 1,000 ranks stay readable."""
    spans: list[list[int]] = []
    for rank in sorted(set(ranks)):
        if spans and rank == spans[-1][1] + 1:
            spans[-1][1] = rank
        else:
            spans.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


class _Warnings:
    """Warnings by kind, capped so a badly broken 1,000-rank run cannot bury the meta table."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[str]] = defaultdict(list)
        self.dropped: Counter[str] = Counter()

    def add(self, kind: str, message: str) -> None:
        if len(self.by_kind[kind]) < MAX_WARNINGS_PER_KIND:
            self.by_kind[kind].append(message)
        else:
            self.dropped[kind] += 1

    def all(self) -> list[str]:
        out = [message for messages in self.by_kind.values() for message in messages]
        out.extend(
            f"... and {count} more {kind} warning(s)" for kind, count in self.dropped.items()
        )
        return out


class _Linker:
    """Pairs the calls of every (side, step); one instance per ``link_ranks`` call."""

    def __init__(self, calls: list[_Call], dumped: dict[StepKey, set[int]]) -> None:
        self.calls = calls
        self.dumped = dumped
        self.links: list[Link] = []
        self.warnings = _Warnings()
        # (side, step, missing rank) -> the (rank, node) calls that name it: one warning each
        self.orphaned: dict[tuple[str, int, int], list[tuple[int, str]]] = defaultdict(list)

    def run(self) -> list[Link]:
        self._link_p2p()
        self._link_collectives()
        for (side, step, missing), callers in self.orphaned.items():
            rank, name = callers[0]
            present = _ranks_text(self.dumped.get((side, step), ()))
            self.warnings.add(
                "missing-rank",
                f"{side} step {step}: rank {missing} is not in the dump (ranks {present} are); "
                f"{len(callers)} communication op(s) have no peer there, e.g. {name} on rank {rank}",
            )
        return self.links

    def _in_dump(self, side: str, step: int, rank: int) -> bool:
        return rank in self.dumped.get((side, step), ())

    def _unlinked(self, side: str, step: int, present: Endpoint, absent: int) -> Verdict:
        if not self._in_dump(side, step, absent):
            assert present.node is not None
            self.orphaned[(side, step, absent)].append((present.rank, present.node.name))
            return _unknown(f"rank {absent} is not in the dump")
        return _unknown(f"rank {absent} has no matching call")

    # ---------------------------------------------------------------- point-to-point

    def _p2p_ends(self, call: _Call) -> Iterator[tuple[Family, int | None, _P2PEnd]]:
        """(SEND or RECV, peer rank, this end) of a plain call or of each op of a batch."""
        node = call.node
        if call.family is not Family.BATCH:
            payload = (
                call.tensor(INPUT, 0, "tensor")
                if call.family is Family.SEND
                else call.tensor(OUTPUT, 0, "tensor")
            )
            yield call.family, call.rank_arg(), _P2PEnd(call.endpoint, payload)
            return
        for index, op in enumerate(node.batch_p2p or []):
            parsed = _batch_op(op)
            if parsed is None:
                continue
            api, family = parsed
            # what arrived is only in the output; what was sent is in both
            payload = TensorStats.of_param(call.params.get(f"output.0.{index}"))
            if payload is None and family is Family.SEND:
                payload = TensorStats.of_param(call.params.get(f"input.0.{index}"))
            end = _P2PEnd(Endpoint(node.rank, node, api, index), payload)
            yield family, _as_int(op.get("peer")), end

    def _link_p2p(self) -> None:
        sends: dict[Channel, list[_P2PEnd]] = defaultdict(list)
        recvs: dict[Channel, list[_P2PEnd]] = defaultdict(list)
        for call in self.calls:
            if call.family not in _P2P_FAMILIES:
                continue
            node = call.node
            for family, peer, end in self._p2p_ends(call):
                if peer is None:
                    self.warnings.add(
                        "no-peer",
                        f"{node.side} step {node.step} rank {node.rank}: {node.name} names no "
                        "peer rank (src/dst missing or not an integer); it is not linked",
                    )
                elif family is Family.SEND:
                    sends[(node.side, node.step, node.rank, peer)].append(end)
                else:
                    recvs[(node.side, node.step, peer, node.rank)].append(end)
        for channel in dict.fromkeys([*sends, *recvs]):  # deterministic order, no duplicates
            side, step, sender, receiver = channel
            sent, received = sends.get(channel, []), recvs.get(channel, [])
            for occurrence, (out, into) in enumerate(zip_longest(sent, received)):
                if out is not None and into is not None:
                    source, target = out.endpoint, into.endpoint
                    verdict = compare_copy(out.payload, into.payload)
                elif out is not None:
                    source = out.endpoint
                    target = Endpoint(receiver, None, source.api)
                    verdict = self._unlinked(side, step, source, receiver)
                else:
                    target = into.endpoint
                    source = Endpoint(sender, None, target.api)
                    verdict = self._unlinked(side, step, target, sender)
                self.links.append(
                    Link(side, step, P2P_GROUP, occurrence, source, target, False, verdict)
                )
            if (
                len(sent) != len(received)
                and self._in_dump(side, step, sender)
                and self._in_dump(side, step, receiver)
            ):
                self.warnings.add(
                    "p2p-count",
                    f"{side} step {step}: rank {sender} sends {len(sent)} message(s) to rank "
                    f"{receiver}, but rank {receiver} receives {len(received)} from rank {sender}",
                )

    # ---------------------------------------------------------------- collectives

    def _link_collectives(self) -> None:
        instances: dict[InstanceKey, dict[int, _Call]] = defaultdict(dict)
        counters: Counter[tuple[str, int, str, str, str, int]] = Counter()
        members_of: dict[tuple[str, int, str], tuple[int, ...]] = {}
        for call in self.calls:
            if call.family in _P2P_FAMILIES:
                continue
            node = call.node
            group = (node.side, node.step, call.group_key)
            if group not in members_of:
                default = tuple(sorted(self.dumped.get((node.side, node.step), ())))
                members_of[group] = call.members or default
            counter = (node.side, node.step, call.group_key, call.api, call.direction, node.rank)
            occurrence = counters[counter]
            counters[counter] += 1
            key = (node.side, node.step, call.group_key, call.api, call.direction, occurrence)
            instances[key][node.rank] = call
        self._check_call_counts(counters, members_of)
        for (side, step, group_key, api, _direction, occurrence), calls in instances.items():
            members = members_of[(side, step, group_key)]
            if any(rank not in members for rank in calls):  # a rank outside its own group
                members = tuple(sorted({*members, *calls}))
            self._link_instance(_Instance(side, step, api, group_key, occurrence, members, calls))

    def _check_call_counts(
        self,
        counters: Counter[tuple[str, int, str, str, str, int]],
        members_of: dict[tuple[str, int, str], tuple[int, ...]],
    ) -> None:
        per_api: dict[tuple[str, int, str, str, str], dict[int, int]] = defaultdict(dict)
        for (side, step, group_key, api, direction, rank), count in counters.items():
            per_api[(side, step, group_key, api, direction)][rank] = count
        for (side, step, group_key, api, direction), counts in per_api.items():
            members = members_of[(side, step, group_key)]
            for rank in members:
                if rank not in counts and self._in_dump(side, step, rank):
                    counts[rank] = 0
            if len(set(counts.values())) <= 1:
                continue
            by_count: dict[int, list[int]] = defaultdict(list)
            for rank, count in counts.items():
                by_count[count].append(rank)
            detail = "; ".join(
                f"{count} time(s) on rank(s) {_ranks_text(ranks)}"
                for count, ranks in sorted(by_count.items(), reverse=True)
            )
            called = f"{api} ({direction})" if direction else api
            self.warnings.add(
                "call-count",
                f"{side} step {step}: group {group_key} (ranks {_ranks_text(members)}) disagrees "
                f"on how often it called {called}: {detail}",
            )

    def _link_instance(self, instance: _Instance) -> None:
        first = next(iter(instance.calls.values()))
        check = _CHECKS.get(instance.api, _check_unsupported)
        if first.family in _ROOTED_KINDS:
            self._link_rooted(instance, first.family is Family.ONE_TO_MANY, check)
            return
        result = check(instance)
        present = [rank for rank in instance.members if rank in instance.calls]
        for index, a in enumerate(present):
            for b in present[index + 1 :]:
                self._add(instance, a, b, True, result.verdict(a, b))
        for absent in instance.members:
            if absent not in instance.calls:
                for rank in present:
                    self._add_unlinked(instance, instance.calls[rank], absent, True, True)

    def _link_rooted(
        self, instance: _Instance, root_sends: bool, check: Callable[[_Instance], _Check]
    ) -> None:
        declared = {rank: call.rank_arg() for rank, call in instance.calls.items()}
        votes = Counter(root for root in declared.values() if root is not None)
        if not votes:
            for call in instance.calls.values():
                node = call.node
                self.warnings.add(
                    "no-peer",
                    f"{node.side} step {node.step} rank {node.rank}: {node.name} names no root "
                    "rank; it is not linked",
                )
            return
        root = instance.root = votes.most_common(1)[0][0]
        result = check(instance)
        for rank in instance.members:
            if rank == root:
                continue
            if root in instance.calls and rank in instance.calls:
                source, target = (root, rank) if root_sends else (rank, root)
                verdict = result.verdict(source, target)
                if declared[rank] not in (None, root):
                    verdict = _mismatch(
                        f"rank {rank} names root {declared[rank]}, the others {root}"
                    )
                self._add(instance, source, target, False, verdict)
            elif root in instance.calls:
                self._add_unlinked(instance, instance.calls[root], rank, False, root_sends)
            elif rank in instance.calls:
                self._add_unlinked(instance, instance.calls[rank], root, False, not root_sends)

    def _add(
        self, instance: _Instance, source: int, target: int, mutual: bool, verdict: Verdict
    ) -> None:
        self.links.append(
            Link(
                instance.side,
                instance.step,
                instance.group_key,
                instance.occurrence,
                instance.calls[source].endpoint,
                instance.calls[target].endpoint,
                mutual,
                verdict,
            )
        )

    def _add_unlinked(
        self, instance: _Instance, call: _Call, peer: int, mutual: bool, sends: bool
    ) -> None:
        here, there = call.endpoint, Endpoint(peer, None, call.api)
        verdict = self._unlinked(instance.side, instance.step, here, peer)
        source, target = (here, there) if sends else (there, here)
        self.links.append(
            Link(
                instance.side,
                instance.step,
                instance.group_key,
                instance.occurrence,
                source,
                target,
                mutual,
                verdict,
            )
        )


# ================================================================ what gets written


def _index_text(node: CommNode, overflow_check: bool) -> str:
    """The peer's overflow level with -oc, else its precision_index, as msprobe shows it."""
    value: Any = node.overflow if overflow_check else node.precision
    if value is None:
        return MISSING_INDEX
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # SQLite hands msprobe an INTEGER-affinity 0, not 0.0
    return str(value)


@dataclass(slots=True)
class _NodeLinks:
    """Everything linked to one communication node: its annotation and flag come from here."""

    # op index -> (communications_type, {peer rank: [index text, peer node]})
    ops: dict[int, tuple[str, dict[str, list[str]]]] = field(default_factory=dict)
    linked: int = 0
    missing: int = 0
    mismatch: str | None = None  # the first disagreement, with the peer it concerns
    consistent: bool = False  # some link could be checked and agreed
    unknown: str | None = None  # why the first unchecked link could not be

    def add(self, verdict: Verdict, peer_rank: int, peer_name: str | None) -> None:
        status = verdict.status
        if status is Consistency.MISMATCH:
            if self.mismatch is None:
                self.mismatch = f"with rank {peer_rank} ({peer_name}): {verdict.reason}"
        elif status is Consistency.CONSISTENT:
            self.consistent = True
        elif self.unknown is None:
            self.unknown = verdict.reason

    def annotation(self) -> str | None:
        """msprobe's JSON (json's default separators, as msprobe writes it): one object, or a
        list of them for a batch_isend_irecv that linked several ops."""
        ops = [
            {"communications_type": kind, "nodes_info": peers}
            for _index, (kind, peers) in sorted(self.ops.items())
        ]
        if not ops:
            return None
        return json.dumps(ops[0] if len(ops) == 1 else ops)

    def verdict(self) -> Verdict:
        """Worst over the links, as ``combine`` would give: mismatch, consistent, unknown."""
        if self.mismatch is not None:
            return _mismatch(self.mismatch)
        if self.consistent:
            return CONSISTENT
        return _unknown(self.unknown or "not linked")


def _per_node(
    links: list[Link], overflow_check: bool, rows: list[LinkRow]
) -> dict[int, _NodeLinks]:
    """Fill ``rows`` (one per node and peer); return what each node is linked to, by ``id``."""
    per_node: dict[int, _NodeLinks] = {}
    index_text: dict[int, str] = {}  # a node is the peer of up to group-size others
    for link in links:
        kinds = ("send_receive", "send_receive") if link.mutual else ("send", "receive")
        verdict = link.verdict
        status, reason = verdict.status.value, verdict.reason
        ends = ((link.source, link.target, kinds[0]), (link.target, link.source, kinds[1]))
        for here, there, kind in ends:
            node, peer = here.node, there.node
            if node is None:
                continue
            peer_name = peer.name if peer is not None else None
            rows.append(
                (  # a LinkRow, as a plain tuple: there is one per node and peer
                    link.side,
                    link.step,
                    here.rank,
                    node.name,
                    here.op_index,
                    here.api,
                    kind,
                    link.group_key,
                    link.occurrence,
                    there.rank,
                    peer_name,
                    status,
                    reason,
                )
            )
            entry = per_node.get(id(node))
            if entry is None:
                entry = per_node[id(node)] = _NodeLinks()
            entry.add(verdict, there.rank, peer_name)
            if peer is None:
                entry.missing += 1
                continue
            entry.linked += 1
            op = entry.ops.get(here.op_index)
            if op is None:
                op = entry.ops[here.op_index] = (kind, {})
            text = index_text.get(id(peer))
            if text is None:
                text = index_text[id(peer)] = _index_text(peer, overflow_check)
            op[1][str(there.rank)] = [text, peer.name]
    return per_node


def _traffic(links: Iterable[Link]) -> Counter[Transfer]:
    """How many transfers went each way, by API and verdict: what the topology is built from."""
    traffic: Counter[Transfer] = Counter()
    for link in links:
        status = link.verdict.status.value
        source, target, api, linked = link.source.rank, link.target.rank, link.api, link.linked
        traffic[(link.side, link.step, source, target, api, status, linked)] += 1
        if link.mutual:
            traffic[(link.side, link.step, target, source, api, status, linked)] += 1
    return traffic


def _dumped_ranks(
    nodes: Sequence[CommNode], dumped: Iterable[tuple[str, int, int]] | None
) -> dict[StepKey, set[int]]:
    ranks: dict[StepKey, set[int]] = defaultdict(set)
    for side, step, rank in dumped or ():
        ranks[(side, step)].add(rank)
    for node in nodes:  # a rank with communication nodes was dumped, whatever the caller says
        ranks[(node.side, node.step)].add(node.rank)
    return dict(ranks)


def _counts(
    calls: list[_Call], links: list[Link], rows: list[LinkRow], node_rows: list[CommNodeRow]
) -> dict[str, Any]:
    linked = [link for link in links if link.linked]
    return {
        "comm_nodes": len(calls),
        "linked_nodes": sum(1 for row in node_rows if row.linked_peers),
        "links": len(linked),
        "unlinked": len(links) - len(linked),
        "link_rows": len(rows),
        "links_by_api": dict(sorted(Counter(link.api for link in linked).items())),
        "links_by_verdict": dict(
            sorted(Counter(str(link.verdict.status) for link in linked).items())
        ),
        "nodes_by_verdict": dict(sorted(Counter(row.verdict for row in node_rows).items())),
    }


# ================================================================ the entry point


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Linking keeps ~10 acyclic objects per link alive at once; refcounting frees them, and
    the cyclic collector would only rescan the growing heap over and over (it doubled the
    time of a 1,024-rank link in bench/bench_links.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def link_ranks(
    conn: sqlite3.Connection,
    nodes: Sequence[CommNode],
    overflow_check: bool,
    dumped: Iterable[tuple[str, int, int]] | None = None,
) -> LinkSummary:
    """Link communication nodes across ranks and write the links (see the module docstring).

    ``dumped`` lists every built (side, step, rank), so that a rank without communication
    nodes still counts as present; without it, the ranks holding communication nodes are.
    """
    with _collector_paused():
        return _link(conn, nodes, overflow_check, dumped)


def _link(
    conn: sqlite3.Connection,
    nodes: Sequence[CommNode],
    overflow_check: bool,
    dumped: Iterable[tuple[str, int, int]] | None,
) -> LinkSummary:
    started = time.perf_counter()
    dumped_ranks = _dumped_ranks(nodes, dumped)
    # timsort is linear on the per-rank runs the pipeline hands over already in order
    ordered = sorted(nodes, key=lambda node: (node.side, node.step, node.rank, node.order))
    calls = [_Call.of(node) for node in ordered]
    linker = _Linker(calls, dumped_ranks)
    links = linker.run()
    paired = time.perf_counter()

    link_rows: list[LinkRow] = []
    per_node = _per_node(links, overflow_check, link_rows)
    annotations: list[Annotation] = []
    node_rows: list[CommNodeRow] = []
    for call in calls:
        node = call.node
        entry = per_node.get(id(node))
        text = entry.annotation() if entry is not None else None
        if text is not None:
            annotations.append(
                Annotation(text, node_id(node.side, node.step, node.rank, node.name))
            )
        verdict = entry.verdict() if entry is not None else _unknown("not linked")
        node_rows.append(
            CommNodeRow(
                node.side,
                node.step,
                node.rank,
                node.name,
                call.api,
                call.kind(),
                P2P_GROUP if call.family in _P2P_FAMILIES else call.group_key,
                entry.linked if entry is not None else 0,
                entry.missing if entry is not None else 0,
                str(verdict.status),
                verdict.reason,
            )
        )
    graphs = build_topologies(_traffic(links), dumped_ranks)
    edge_rows, rank_rows = topology_rows(graphs)
    write_links(conn, annotations, link_rows, node_rows, edge_rows, rank_rows)

    counts = _counts(calls, links, link_rows, node_rows)
    counts["topology"] = topology_counts(graphs)
    counts["seconds"] = {
        "pairing": round(paired - started, 4),
        "total": round(time.perf_counter() - started, 4),
    }
    return LinkSummary(warnings=linker.warnings.all(), counts=counts)
