"""From pairing results to what gets written: annotations, gb_* rows, the traffic the topology
is built from, and the counts gb_meta "links" reports.

Point-to-point and rooted links become one gb_links row per end. A many↔many call becomes one
gb_comm_calls row, gb_call_pairs rows for its exceptional pairs only, and its members' flags
and annotations; its traffic is added up per group and expanded into rank pairs once per
distinct (group, API, verdict), not once per call.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from graphboard.distributed.annotations import NodeLinks, PeerInfos, call_annotations, per_node
from graphboard.distributed.apis import P2P_FAMILIES, Family
from graphboard.distributed.call_verdicts import member_verdict
from graphboard.distributed.calls import Call
from graphboard.distributed.context import PairingContext
from graphboard.distributed.group_call import GroupCall
from graphboard.distributed.model import Link
from graphboard.distributed.p2p import P2P_GROUP
from graphboard.distributed.verdicts import (
    MISMATCH_STATUS,
    STATUS_TEXT,
    Consistency,
    Verdict,
    unknown,
)
from graphboard.store.links import (
    COMM_NODE_LINKED,
    COMM_NODE_VERDICT,
    CallRow,
    LinkTables,
    PairRow,
    node_id,
)
from graphboard.topology import Block, Transfer

NOT_LINKED = unknown("not linked")
UNKNOWN = Consistency.UNKNOWN.value


class Traffic:
    """What the topology is built from: pairwise transfers, and blocks that stand for every
    pair of a many↔many call's members (or of its members and its missing members).

    Each many↔many call adds one count to its (members, API, default verdict) block, and its
    exceptions correct single pairs; the topology expands each distinct block once.
    """

    def __init__(self) -> None:
        self.pairs: Counter[Transfer] = Counter()
        self.blocks: Counter[Block] = Counter()

    def add_link(self, link: Link) -> None:
        status = STATUS_TEXT[link.verdict.status]
        source, target, api, linked = link.source.rank, link.target.rank, link.api, link.linked
        self.pairs[(link.side, link.step, source, target, api, status, linked)] += 1

    def add_call(self, call: GroupCall) -> None:
        instance = call.instance
        side, step, api, present = instance.side, instance.step, instance.api, call.present
        if call.default is not None:
            default = STATUS_TEXT[call.default.status]
            self.blocks[(side, step, api, default, True, present, present)] += 1
            for (a, b), verdict in call.exceptions.items():
                status = STATUS_TEXT[verdict.status]
                for source, target in ((a, b), (b, a)):
                    self.pairs[(side, step, source, target, api, default, True)] -= 1
                    self.pairs[(side, step, source, target, api, status, True)] += 1
        if call.absent:  # a many↔many link goes both ways
            absent = tuple(call.absent)
            self.blocks[(side, step, api, UNKNOWN, False, present, absent)] += 1
            self.blocks[(side, step, api, UNKNOWN, False, absent, present)] += 1


class Counts:
    """gb_meta "links": links are counted per pair of nodes, as when each was a gb_links row."""

    def __init__(self) -> None:
        self.links = 0
        self.unlinked = 0
        self.by_api: Counter[str] = Counter()
        self.by_verdict: Counter[str] = Counter()

    def add_link(self, link: Link) -> None:
        if link.linked:
            self.links += 1
            self.by_api[link.api] += 1
            self.by_verdict[link.verdict.status] += 1
        else:
            self.unlinked += 1

    def add_call(self, call: GroupCall) -> None:
        pairs, api = call.pairs, call.instance.api
        self.links += pairs
        self.unlinked += len(call.present) * len(call.absent)
        if pairs:
            self.by_api[api] += pairs
        if call.default is not None:
            self.by_verdict[call.default.status] += pairs - len(call.exceptions)
        for verdict in call.exceptions.values():
            self.by_verdict[verdict.status] += 1

    def as_dict(self, calls: int, tables: LinkTables) -> dict[str, Any]:
        nodes = tables.comm_nodes
        nodes_by_verdict = Counter(str(row[COMM_NODE_VERDICT]) for row in nodes)
        return {
            "comm_nodes": calls,
            "linked_nodes": sum(1 for row in nodes if row[COMM_NODE_LINKED]),
            "links": self.links,
            "unlinked": self.unlinked,
            "link_rows": len(tables.links),
            "call_rows": len(tables.calls),
            "call_pair_rows": len(tables.pairs),
            "links_by_api": dict(sorted(self.by_api.items())),
            "links_by_verdict": _plain(self.by_verdict),
            "nodes_by_verdict": _plain(nodes_by_verdict),
        }


def _plain(counts: Counter[str]) -> dict[str, int]:
    """Sorted, with plain str keys: the statuses counted are Consistency members."""
    return {str(key): count for key, count in sorted(counts.items())}


def _call_row(call: GroupCall) -> CallRow:
    instance = call.instance
    default = call.default
    return (
        call.id,
        instance.side,
        instance.step,
        instance.group_key,
        instance.api,
        instance.direction,
        instance.occurrence,
        call.family.value,
        json.dumps(list(instance.members)),
        len(call.present),
        json.dumps({str(rank): reason for rank, reason in call.absent.items()}),
        instance.root,
        STATUS_TEXT[call.verdict.status],
        call.verdict.reason,
        STATUS_TEXT[default.status] if default is not None else None,
        default.reason if default is not None else None,
    )


def _pair_rows(call: GroupCall) -> list[PairRow]:
    return [
        (call.id, min(a, b), max(a, b), STATUS_TEXT[verdict.status], verdict.reason)
        for (a, b), verdict in call.exceptions.items()
    ]


def _member_flags(call: GroupCall) -> dict[int, Verdict]:
    """Every present member's flag; O(members + exceptions)."""
    by_member: dict[int, dict[int, Verdict]] = {}
    for (a, b), verdict in call.exceptions.items():
        by_member.setdefault(a, {})[b] = verdict
        by_member.setdefault(b, {})[a] = verdict
    present, calls = call.present, call.instance.calls
    position = {rank: index for index, rank in enumerate(present)}
    first_absent = next(iter(call.absent.values()), None)

    def name_of(rank: int) -> str:
        return calls[rank].node.name

    flags: dict[int, Verdict] = {}
    shared: Verdict | None = None  # the flag of a member without exceptions, once made
    for rank in present:
        mine = by_member.get(rank)
        if mine is None and shared is not None:
            flags[rank] = shared
            continue
        flag = member_verdict(
            rank, present, position, call.default, mine or {}, first_absent, name_of
        )
        # members without exceptions share their flag, unless it names the mismatching peer
        if mine is None and flag.status is not MISMATCH_STATUS:
            shared = flag
        flags[rank] = flag
    return flags


def build_tables(
    calls: Sequence[Call], ctx: PairingContext, overflow_check: bool
) -> tuple[LinkTables, Traffic, Counts]:
    tables = LinkTables()
    traffic = Traffic()
    counts = Counts()
    infos = PeerInfos(overflow_check)
    for link in ctx.links:
        traffic.add_link(link)
        counts.add_link(link)
    by_node = per_node(ctx.links, infos, tables.links)

    # id(node) -> (flag, annotation) of the members of many↔many calls
    members: dict[int, tuple[Verdict, str | None]] = {}
    for group_call in ctx.group_calls:
        tables.calls.append(_call_row(group_call))
        if group_call.family is Family.MANY_TO_MANY:
            traffic.add_call(group_call)
            counts.add_call(group_call)
            tables.pairs.extend(_pair_rows(group_call))
            _add_members(group_call, infos, members)

    # in node order, which is the order tb_nodes holds them in: the UPDATEs walk its pages once
    for call in calls:
        node = call.node
        key = id(node)
        entry: NodeLinks | None = by_node.get(key)
        linked = missing = 0
        if entry is not None:
            text = entry.annotation()
            verdict = entry.verdict()
            linked, missing = entry.linked, entry.missing
        elif key in members:
            verdict, text = members[key]
            assert call.call_id is not None
            mine = ctx.group_calls[call.call_id - 1]
            linked, missing = len(mine.present) - 1, len(mine.absent)
        else:
            verdict, text = NOT_LINKED, None
        if text is not None:
            tables.annotations.append((text, node_id(node.side, node.step, node.rank, node.name)))
        tables.comm_nodes.append(
            (
                node.side,
                node.step,
                node.rank,
                node.name,
                call.api,
                call.kind(),
                P2P_GROUP if call.family in P2P_FAMILIES else call.group_key,
                linked,
                missing,
                STATUS_TEXT[verdict.status],
                verdict.reason,
                call.call_id,
            )
        )
    return tables, traffic, counts


def _add_members(
    call: GroupCall, infos: PeerInfos, members: dict[int, tuple[Verdict, str | None]]
) -> None:
    calls = call.instance.calls
    flags = _member_flags(call)
    peers = [calls[rank].node for rank in call.present]
    texts = dict(call_annotations(peers, infos))  # none with fewer than two members
    for rank, flag in flags.items():
        node = calls[rank].node
        members[id(node)] = (flag, texts.get(node.rank))
