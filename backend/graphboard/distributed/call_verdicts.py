"""Verdicts of a many↔many call without judging every pair of members one by one.

A many↔many call of N members has N·(N−1)/2 pairs. When the check of the call is ``uniform``
or depends on each member alone (``per_rank``, ``same``), a pair's verdict is a function of its
two members' classes: members in the most common class give the call's ``default`` pair
verdict, and only pairs with a member outside that class are judged. That costs O(N) for a
call whose members agree, and O(N · odd members) otherwise. Checks that really differ per
pair (all_gather, all_to_all: each slot holds another member's data, N slots per member) are
judged pair by pair, which is still linear in the statistics the dump holds.

The per-member flag then needs only the member's exceptional pairs: the first pair in member
order with a given verdict is either one of them or the first pair that is not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence

from graphboard.distributed.collective_checks import Check
from graphboard.distributed.verdicts import CONSISTENT, Consistency, Verdict, mismatch, unknown

Pair = tuple[int, int]  # (earlier, later) present member, in member order


def pair_verdicts(
    check: Check, present: Sequence[int]
) -> tuple[Verdict | None, dict[Pair, Verdict]]:
    """(the verdict most pairs share, {pair: verdict} for the pairs that differ from it).

    The default is None only when there is no pair at all (fewer than two members present).
    """
    if len(present) < 2:
        return None, {}
    if check.uniform is not None:
        return check.uniform, {}
    if check.pair is not None:
        judged = {
            (a, b): check.verdict(a, b)
            for index, a in enumerate(present)
            for b in present[index + 1 :]
        }
        return _split(judged, None)
    same = check.same if check.same is not None else {}
    per_rank = check.per_rank
    classes: dict[int, Hashable] = {rank: (per_rank.get(rank), same.get(rank)) for rank in present}
    common = Counter(classes.values()).most_common(1)[0][0]
    plain = [rank for rank in present if classes[rank] == common]
    odd = {rank for rank in present if classes[rank] != common}
    judged = {}
    for index, a in enumerate(present):
        if a in odd:  # every pair of an odd member, each pair once
            judged.update(((a, b), check.verdict(a, b)) for b in present[index + 1 :])
        else:
            judged.update(((a, b), check.verdict(a, b)) for b in present[index + 1 :] if b in odd)
    # two plain members: a real pair, whose verdict every other plain pair shares
    default = check.verdict(plain[0], plain[1]) if len(plain) >= 2 else None
    return _split(judged, default)


def _split(
    judged: dict[Pair, Verdict], default: Verdict | None
) -> tuple[Verdict | None, dict[Pair, Verdict]]:
    if default is None:
        default = Counter(judged.values()).most_common(1)[0][0]
    return default, {pair: verdict for pair, verdict in judged.items() if verdict != default}


def call_verdict(
    default: Verdict | None, exceptions: Mapping[Pair, Verdict], absent: Mapping[int, str]
) -> Verdict:
    """Worst over the call's links: a mismatching pair, else consistent if any pair agreed."""
    verdicts = [default] if default is not None else []
    verdicts.extend(exceptions.values())
    verdicts.extend(unknown(reason) for reason in absent.values())
    if not verdicts:
        return unknown("no member to link with")
    found: dict[Consistency, Verdict] = {}
    for verdict in verdicts:
        found.setdefault(verdict.status, verdict)
    return (
        found.get(Consistency.MISMATCH)
        or found.get(Consistency.CONSISTENT)
        or found[Consistency.UNKNOWN]
    )


def member_verdict(
    rank: int,
    present: Sequence[int],
    position: Mapping[int, int],
    default: Verdict | None,
    by_peer: Mapping[int, Verdict],
    first_absent: str | None,
    name_of: Callable[[int], str],
) -> Verdict:
    """One member's flag, as the worst over its links in member order (the rule of
    ``annotations.NodeLinks``): the first mismatch naming its peer, else consistent if any
    link agreed, else why the first link could not be checked.

    ``by_peer`` holds the member's pairs whose verdict is not ``default``; every other present
    peer has ``default``. Missing members come after every present peer.
    """
    # the first peer without an exception: at most len(by_peer) + 1 members are skipped
    first_plain = next((peer for peer in present if peer != rank and peer not in by_peer), None)

    def first(status: Consistency) -> tuple[int, Verdict] | None:
        found = [(peer, verdict) for peer, verdict in by_peer.items() if verdict.status is status]
        if default is not None and default.status is status and first_plain is not None:
            found.append((first_plain, default))
        return min(found, key=lambda item: position[item[0]]) if found else None

    hit = first(Consistency.MISMATCH)
    if hit is not None:
        peer, verdict = hit
        return mismatch(f"with rank {peer} ({name_of(peer)}): {verdict.reason}")
    if first(Consistency.CONSISTENT) is not None:
        return CONSISTENT
    hit = first(Consistency.UNKNOWN)
    reason = hit[1].reason if hit is not None else first_absent
    return unknown(reason or "not linked")
