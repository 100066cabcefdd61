"""Which ranks merge into which graph: TP and PP groups, and the data-parallel replicas.

Groups come first from the dumps, as msprobe finds them: a rank's TP group is the
``group_ranks`` of its first ``all_reduce`` / ``reduce_scatter`` record, its pipeline successor
the ``dst`` of its first send (or the peer of a ``batch_isend_irecv``'s first outgoing op), and
the successors are followed into chains. When a side finds nothing, or groups whose size is not
the flag's, the groups are generated from Megatron's rank order instead (``tp-cp-ep-dp-pp`` by
default, tp varying fastest; cp = ep = 1), as msprobe falls back; graphboard says so in a
warning where msprobe is silent.

A replica is what merges into one graph: its pipeline chains (one per TP rank), whose first
ranks are then merged across TP. Its graph carries the rank id of its main rank, the first
rank of its first chain, as msprobe's does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from graphboard.dump.records import Param, Role
from graphboard.merge.flags import ParallelFlags, ParallelFlagsError

Group = tuple[int, ...]


class Strategy(StrEnum):
    """msprobe's merge strategies, chosen by the first row of its table that holds."""

    NO_PARALLEL = "no parallel"
    TP = "TP"
    PP = "PP"
    VPP = "VPP"
    TPPP = "TP+PP"
    FULL = "TP+PP+DP"


def strategy_of(flags: ParallelFlags) -> Strategy:
    tp, pp, ranks = flags.tp, flags.pp, flags.rank_size
    pipeline = Strategy.PP if flags.vpp == 1 else Strategy.VPP
    if tp == pp == ranks == 1:
        return Strategy.NO_PARALLEL
    if tp == ranks or pp == 1:
        return Strategy.TP
    if pp == ranks or tp == 1:
        return pipeline
    return Strategy.TPPP if tp * pp == ranks else Strategy.FULL


def megatron_groups(flags: ParallelFlags, token: str) -> list[Group]:
    """The groups of one dimension (``tp``, ``pp``, ``dp`` ...) in Megatron's rank order:
    the ranks that agree on every other dimension, in order of their coordinate in this one."""
    sizes = {"tp": flags.tp, "cp": 1, "ep": 1, "dp": flags.dp, "pp": flags.pp}
    strides: dict[str, int] = {}
    stride = 1
    for name in flags.order.split("-"):
        strides[name] = stride
        stride *= sizes[name]
    others = [name for name in strides if name != token]
    groups: dict[tuple[int, ...], list[int]] = {}
    for rank in range(flags.rank_size):
        key = tuple((rank // strides[name]) % sizes[name] for name in others)
        groups.setdefault(key, []).append(rank)
    return sorted(tuple(group) for group in groups.values())


_TP_COLLECTIVES = ("reduce_scatter", "all_reduce")
_SENDS = ("Distributed.send.", "Distributed.isend.")


def first_tp_group(records: Mapping[str, Sequence[Param]]) -> Group | None:
    """The ranks of the first all_reduce / reduce_scatter record's process group."""
    from graphboard.distributed.calls import group_ranks  # at merge time, not when planning

    for name, params in records.items():
        if not any(collective in name for collective in _TP_COLLECTIVES):
            continue
        for param in params:
            if param.role is Role.INPUT and param.extra and "group_ranks" in param.extra:
                return group_ranks(param.extra["group_ranks"]) or None
        return None  # the default group: nothing msprobe can take a group from
    return None


def first_send_peer(
    rank: int,
    records: Mapping[str, Sequence[Param]],
    batch_p2p: Mapping[str, Sequence[Mapping[str, object]]],
) -> int | None:
    """The global rank the first send (or the first outgoing op of a batch) goes to."""
    from graphboard.distributed.stats import as_int  # at merge time, not when planning

    for name, params in records.items():
        if name.startswith(_SENDS):
            by_key = {param.key: param for param in params}
            param = by_key.get("input.dst") or by_key.get("input.1")
            return as_int(param.value) if param is not None else None
        for op in batch_p2p.get(name, ()):
            peer = as_int(op.get("peer"))
            if op.get("op") == "isend" and peer is not None and peer != rank:
                return peer
    return None


def pipeline_chains(successors: Mapping[int, int]) -> list[Group]:
    """Each rank's successor followed from the ranks nobody sends to: {0: 2, 2: 4, 1: 3} gives
    [(0, 2, 4), (1, 3)]. A last stage sending gradients back makes a cycle, which ends a chain."""
    receivers = set(successors.values())
    chains: list[Group] = []
    for head in sorted(rank for rank in successors if rank not in receivers):
        chain, seen = [head], {head}
        while (following := successors.get(chain[-1])) is not None and following not in seen:
            chain.append(following)
            seen.add(following)
        chains.append(tuple(chain))
    return chains


def _partitions(groups: Sequence[Group], size: int, rank_size: int) -> bool:
    members = [rank for group in groups for rank in group]
    return all(len(group) == size for group in groups) and sorted(members) == list(range(rank_size))


def resolve_groups(
    flags: ParallelFlags,
    token: str,
    found: Iterable[Group | None],
    side: str,
    warnings: list[str],
) -> list[Group]:
    """The groups found in the dumps, or Megatron's when they do not fit the flags."""
    size = flags.tp if token == "tp" else flags.pp
    generated = megatron_groups(flags, token)
    if size == 1:
        return generated
    groups = list(dict.fromkeys(group for group in found if group))
    if groups and _partitions(groups, size, flags.rank_size):
        return sorted(groups)
    source = "first all_reduce / reduce_scatter" if token == "tp" else "first send"
    if groups:
        warnings.append(
            f"{side}: the {token.upper()} groups in the dumps ({source}: "
            f"{', '.join(str(list(group)) for group in groups)}) do not split "
            f"{flags.rank_size} ranks into groups of --{token} {size}; using Megatron's "
            f"{flags.order} order instead"
        )
    return generated


@dataclass(frozen=True, slots=True)
class Replica:
    """One data-parallel replica: the ranks that merge into one graph."""

    index: int
    stages: tuple[Group, ...]  # one pipeline chain per TP rank, the main rank's first

    @property
    def main_rank(self) -> int:
        return self.stages[0][0]

    @property
    def tp_group(self) -> Group:
        """The first stage of each chain, merged across TP after the pipeline merge."""
        return tuple(chain[0] for chain in self.stages)

    @property
    def ranks(self) -> Group:
        return tuple(rank for chain in self.stages for rank in chain)


def replicas(
    flags: ParallelFlags, tp_groups: Sequence[Group], pp_groups: Sequence[Group]
) -> list[Replica]:
    """The replicas, in order of their main ranks; every rank in exactly one."""
    chain_of = {chain[0]: chain for chain in pp_groups}
    merged = [group for group in tp_groups if all(rank in chain_of for rank in group)]
    found = sorted(tuple(chain_of[rank] for rank in group) for group in merged)
    result = [Replica(index, stages) for index, stages in enumerate(found)]
    covered = sorted(rank for replica in result for rank in replica.ranks)
    if covered != list(range(flags.rank_size)) or len(result) != flags.dp:
        raise ParallelFlagsError(
            f"{flags.describe()}: the TP groups {[list(group) for group in tp_groups]} and PP "
            f"groups {[list(group) for group in pp_groups]} do not make {flags.dp} "
            f"data-parallel replica(s) covering ranks 0..{flags.rank_size - 1}"
        )
    return result


def generated_replicas(flags: ParallelFlags) -> list[Replica]:
    """The replicas Megatron's rank order gives, before any dump is read."""
    return replicas(flags, megatron_groups(flags, "tp"), megatron_groups(flags, "pp"))


def found_replicas(
    flags: ParallelFlags,
    records: Mapping[int, Mapping[str, Sequence[Param]]],
    batch_p2p: Mapping[int, Mapping[str, Sequence[Mapping[str, object]]]],
    side: str,
    warnings: list[str],
) -> list[Replica]:
    """The replicas of one side's ranks (``records[rank]``: that rank's dump.json records in
    order), from the groups its dumps show, or Megatron's order where they do not fit."""
    tp_found = (first_tp_group(records[rank]) for rank in sorted(records))
    successors = {
        rank: peer
        for rank in sorted(records)
        if (peer := first_send_peer(rank, records[rank], batch_p2p.get(rank, {}))) is not None
    }
    tp_groups = resolve_groups(flags, "tp", tp_found, side, warnings)
    pp_groups = resolve_groups(flags, "pp", pipeline_chains(successors), side, warnings)
    return replicas(flags, tp_groups, pp_groups)
