"""A many↔many call judged by member classes gives what judging every pair would."""

from __future__ import annotations

import random

import pytest

from graphboard.distributed.annotations import NodeLinks
from graphboard.distributed.call_verdicts import member_verdict, pair_verdicts
from graphboard.distributed.collective_checks import Check
from graphboard.distributed.stats import TensorStats
from graphboard.distributed.verdicts import CONSISTENT, Verdict, mismatch, unknown

RESULTS = [
    TensorStats("torch.float32", (4,), 4.0, 1.0, 2.5, 5.0),
    TensorStats("torch.float32", (4,), 4.0, 1.0, 2.6, 5.0),
    None,
]
VERDICTS = [CONSISTENT, mismatch("Max 5, expected 4"), unknown("no statistics")]


def _random_check(rng: random.Random, members: list[int]) -> Check:
    shape = rng.choice(["uniform", "per_rank", "same", "both", "pair", "group"])
    common = rng.choice(VERDICTS)

    def member_verdict_of() -> Verdict:
        return common if rng.random() < 0.7 else rng.choice(VERDICTS)

    if shape == "uniform":
        return Check(uniform=rng.choice(VERDICTS))
    check = Check(group=rng.choice([None, *VERDICTS]))
    if shape in ("per_rank", "both"):
        check.per_rank = {rank: member_verdict_of() for rank in members if rng.random() < 0.9}
    if shape in ("same", "both"):
        usual = rng.choice(RESULTS)
        check.same = {
            rank: usual if rng.random() < 0.7 else rng.choice(RESULTS) for rank in members
        }
    if shape == "pair":
        table = {(a, b): rng.choice(VERDICTS) for a in members for b in members}
        check.pair = lambda a, b: table[(a, b)]
    return check


@pytest.mark.parametrize("seed", range(300))
def test_matches_judging_every_pair(seed: int) -> None:
    rng = random.Random(seed)
    members = rng.sample(range(40), rng.randint(1, 9))  # group order need not be rank order
    check = _random_check(rng, members)
    default, exceptions = pair_verdicts(check, members)

    every = {(a, b): check.verdict(a, b) for i, a in enumerate(members) for b in members[i + 1 :]}
    assert {pair: exceptions.get(pair, default) for pair in every} == every
    assert (default is None) == (len(members) < 2)

    absent = ["rank 99 has no matching call"] if rng.random() < 0.3 else []
    position = {rank: index for index, rank in enumerate(members)}
    for rank in members:
        by_peer: dict[int, Verdict] = {}
        expected = NodeLinks()  # the rule per_node applies to a node's links, in link order
        for peer in members:
            if peer != rank:
                pair = (rank, peer) if position[rank] < position[peer] else (peer, rank)
                expected.add(every[pair], peer, f"node{peer}")
                if pair in exceptions:
                    by_peer[peer] = exceptions[pair]
        for reason in absent:
            expected.add(unknown(reason), 99, None)
        got = member_verdict(
            rank,
            members,
            position,
            default,
            by_peer,
            absent[0] if absent else None,
            lambda peer: f"node{peer}",
        )
        assert got == expected.verdict()
