"""The answer ``graphboard diagnose``, the read API, ci-check and a job's verdict give: one
computation over an open .vis.db (docs/diagnose.md).

In order: an overflow or NaN in the target run (where it was born, across ranks); else, for
two runs of one configuration, the first op that is not deterministic; else, for a compare of
two configurations, the first introduced error; else nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from graphboard.diagnose import next_config
from graphboard.diagnose.determinism import NONDETERMINISTIC, compare_runs
from graphboard.diagnose.origin import INPUT, OUTPUT, WEIGHT, ParamEvidence, evidence_of
from graphboard.diagnose.ranks import BORN, RECEIVER, RankState, rank_state
from graphboard.diagnose.reading import graph_ops
from graphboard.graph.model import GOLDEN_SIDE, TARGET_SIDE
from graphboard.graph.sides import Side
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader import VisDb, graphs, listing, node_data, tree
from graphboard.store.rule_columns import MSPROBE

OVERFLOW, NONDETERMINISM, FIRST_ERROR, NONE = "overflow", "nondeterminism", "first_error", "none"
MODES = ("auto", OVERFLOW, NONDETERMINISM, FIRST_ERROR)

ADVICE = {
    WEIGHT: "a parameter was already inf/NaN when the step began: the previous step's update "
    "made it. Dump the previous step's backward (its gradients) and diagnose that dump.",
    INPUT: "an input was already inf/NaN though no captured op made it: an op ran outside the "
    "dump. Read this op's stack for where the input came from; dump its module at level mix.",
    OUTPUT: "this op made inf/NaN from finite inputs: dump its tensors (level L1, task "
    "tensor) and run it alone on them against a CPU or float32 run.",
    NONDETERMINISTIC: "its inputs are identical on both runs and its outputs differ: the op is "
    "not deterministic. A random op: draw on the CPU; otherwise dump its tensors and look for "
    "a deterministic implementation.",
    "uncaptured_input": "its inputs already differ on the two runs: an op before it was not "
    "captured. Read its stack for where the input came from; dump its module at level mix.",
    FIRST_ERROR: "the first node that introduces an error: dump its tensors and verify it "
    "alone (single-op check against the golden run's inputs).",
}


@dataclass(slots=True)
class RankOut:
    rank: int
    state: str  # born | receiver | clean
    node: str | None
    kind: str | None
    collective: str | None
    collective_inputs_bad: bool | None
    peers: list[dict[str, Any]]


@dataclass(slots=True)
class Diagnosis:
    kind: str  # overflow | nondeterminism | first_error | none
    found: bool
    summary: str
    step: int | None = None
    rank: int | None = None
    node: str | None = None
    node_class: str | None = None  # weight | input | output | nondeterministic | ...
    module: str | None = None
    side: str = Side.TARGET.value  # as the answer spells it; the graph key's is TARGET_SIDE
    evidence: list[ParamEvidence] = field(default_factory=list)
    ranks: list[RankOut] = field(default_factory=list)
    also_born: list[int] = field(default_factory=list)  # other ranks it was born on
    by_design: list[str] = field(default_factory=list)
    advice: str | None = None
    next_config: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _keys(db: VisDb, side: str) -> dict[int, list[GraphKey]]:
    by_step: dict[int, list[GraphKey]] = {}
    for stats in listing.graphs(db):
        if stats.side == side:
            by_step.setdefault(stats.step, []).append(GraphKey(side, stats.step, stats.rank))
    return {step: sorted(keys, key=lambda k: k.rank) for step, keys in sorted(by_step.items())}


def _ranks(db: VisDb, rank: int) -> list[int]:
    """msprobe's ``rank`` for the next dump: the rank, in a multi-rank run; [] (every rank)
    for a single-rank one, since msprobe's dumper dumps nothing in a run without
    torch.distributed when ``rank`` lists any rank."""
    held = {stats.rank for stats in listing.graphs(db) if stats.side == TARGET_SIDE}
    return [rank] if len(held) > 1 else []


def _rank_out(state: RankState) -> RankOut:
    return RankOut(
        state.rank,
        state.state,
        state.origin.node if state.origin else None,
        state.origin.kind if state.origin else None,
        state.collective,
        state.collective_inputs_bad,
        [asdict(peer) for peer in state.peers],
    )


def overflow(db: VisDb) -> Diagnosis | None:
    """The step and rank where inf/NaN was born and its origin there; None when no rank of
    any step holds one."""
    for step, keys in _keys(db, TARGET_SIDE).items():
        states = [rank_state(db, key, graph_ops(db, key)) for key in keys]
        if not any(state.origin for state in states):
            continue
        ranks = [_rank_out(state) for state in states]
        born = [state for state in states if state.state == BORN]
        if not born:
            receivers = [state.rank for state in states if state.state == RECEIVER]
            return Diagnosis(
                OVERFLOW,
                True,
                f"step {step}: ranks {receivers} received inf/NaN through communication; the "
                "rank it was born on is not in this dump",
                step=step,
                ranks=ranks,
                advice="dump every rank of this step.",
                next_config=next_config.module_statistics(None, step, []),
            )
        first = born[0]
        origin = first.origin
        assert origin is not None
        ranks_note = (
            f" (ranks {[s.rank for s in states if s.state == RECEIVER]} received it)"
            if len(states) > 1
            else ""
        )
        if origin.kind == WEIGHT:
            config = next_config.previous_backward(step, _ranks(db, first.rank))
        elif origin.kind == INPUT:
            config = next_config.module_statistics(origin.module, step, _ranks(db, first.rank))
        else:
            config = next_config.op_tensors(origin.node, step, _ranks(db, first.rank))
        notes = []
        if origin.kind == WEIGHT and step == 0:
            notes.append("step 0 is the first step: the weights may have been loaded bad")
        return Diagnosis(
            OVERFLOW,
            True,
            f"inf/NaN born at step {step} rank {first.rank} in {origin.node} "
            f"({origin.kind}){ranks_note}",
            step=step,
            rank=first.rank,
            node=origin.node,
            node_class=origin.kind,
            module=origin.module,
            evidence=origin.evidence,
            ranks=ranks if len(states) > 1 else [],
            also_born=[state.rank for state in born[1:]],
            by_design=origin.by_design,
            advice=ADVICE[origin.kind],
            next_config=config,
            notes=notes,
        )
    return None


def _runs(db: VisDb, mode: str) -> Diagnosis | None:
    """Two runs of one configuration: the first non-deterministic op (or uncaptured input)."""
    golden_steps = _keys(db, GOLDEN_SIDE)
    if not golden_steps:
        return None
    differences = []
    for step, keys in _keys(db, TARGET_SIDE).items():
        for key in keys:
            golden_key = GraphKey(GOLDEN_SIDE, step, key.rank)
            if not graphs.has_graph(db, golden_key):
                continue
            compared = compare_runs(db, key, golden_key, graph_ops(db, key))
            if not compared.same_configuration and mode != NONDETERMINISM:
                return None
            if compared.difference is not None:
                differences.append((key, compared.difference))
        if differences:
            break
    if not differences:
        return Diagnosis(
            NONDETERMINISM, False, "the two runs are identical: every op's record is the same"
        )
    key, difference = differences[0]
    return Diagnosis(
        NONDETERMINISM,
        True,
        f"step {key.step} rank {key.rank}: {difference.node} "
        + (
            "is not deterministic (identical inputs, different outputs)"
            if difference.kind == NONDETERMINISTIC
            else "has differing inputs: an op before it was not captured"
        ),
        step=key.step,
        rank=key.rank,
        node=difference.node,
        node_class=difference.kind,
        module=difference.module,
        evidence=difference.evidence,
        advice=ADVICE[difference.kind],
        next_config=(
            next_config.op_tensors(difference.node, key.step, _ranks(db, key.rank))
            if difference.kind == NONDETERMINISTIC
            else next_config.module_statistics(difference.module, key.step, _ranks(db, key.rank))
        ),
        notes=[f"also differing on rank {k.rank}: {d.node}" for k, d in differences[1:]],
    )


def _first_error(db: VisDb, rules: str) -> Diagnosis | None:
    for keys in _keys(db, TARGET_SIDE).values():
        for key in keys:
            found = tree.first_error(db, key, rules)
            if found is None or found.introduced != "error":
                continue
            params = node_data.params(db, key, found.name) or []
            api = found.node_type != 0
            return Diagnosis(
                FIRST_ERROR,
                True,
                f"step {key.step} rank {key.rank}: the first error starts at {found.name}",
                step=key.step,
                rank=key.rank,
                node=found.name,
                node_class="error",
                module=found.parent,
                evidence=[evidence_of(p) for p in params if p.is_tensor][:8],
                advice=ADVICE[FIRST_ERROR],
                next_config=next_config.op_tensors(found.name, key.step, _ranks(db, key.rank))
                if api
                else next_config.module_statistics(found.name, key.step, _ranks(db, key.rank)),
            )
    return None


def diagnose(db: VisDb, mode: str = "auto", rules: str = MSPROBE) -> Diagnosis:
    """The answer for the file (``mode`` picks one kind of question instead of all in turn).

    In turn: an overflow; then, for a compare, the first error, and when no node is an error
    and both runs have the same dtypes everywhere, the first op that is not bit-identical (two
    runs of one configuration differ by a few ulps, under any error threshold). An md5
    compare is read for non-determinism first: its verdicts only say equal or not. The
    first error is the one under the rule set ``rules``."""
    if mode in ("auto", OVERFLOW):
        found = overflow(db)
        if found is not None or mode == OVERFLOW:
            return found or Diagnosis(OVERFLOW, False, "no origin found: no inf/NaN in the run")
    if mode == NONDETERMINISM or (mode == "auto" and db.config().data_mode == "md5"):
        found = _runs(db, mode)
        if found is not None or mode == NONDETERMINISM:
            return found or Diagnosis(NONDETERMINISM, False, "not a compare of two runs")
    if mode in ("auto", FIRST_ERROR):
        found = _first_error(db, rules)
        if found is not None or mode == FIRST_ERROR:
            return found or Diagnosis(FIRST_ERROR, False, "no origin found: no node is an error")
    found = _runs(db, mode)
    if found is not None:
        return found
    return Diagnosis(NONE, False, "no origin found: no inf/NaN, and no op introduces an error")
