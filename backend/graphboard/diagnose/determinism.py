"""Two runs of one configuration: the first op that is not deterministic (docs/diagnose.md).

Both runs are dumped with md5 or statistics; up to the first non-deterministic op every
record is bit-identical. Walking the ops in execution order, the first op that differs is
either an op whose inputs are identical and outputs differ (it is the suspect, §2.3.2.2), or
an op whose inputs already differ (an op before it was not captured: read its stack).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphboard.diagnose.origin import Op, ParamEvidence, evidence_of
from graphboard.dump.records import Param, Role
from graphboard.store.graph_views import GraphKey
from graphboard.store.reader import VisDb, node_data, overlay

NONDETERMINISTIC, UNCAPTURED = "nondeterministic", "uncaptured_input"


@dataclass(slots=True)
class Difference:
    node: str
    golden_node: str
    position: int
    kind: str  # nondeterministic | uncaptured_input
    differing: list[str]  # the parameter keys that differ
    evidence: list[ParamEvidence]  # target's parameters, then the golden run's, that differ
    module: str | None


@dataclass(slots=True)
class RunsCompared:
    same_configuration: bool  # every paired tensor has the same dtype on both runs
    difference: Difference | None
    unpaired: int  # ops of the first run without a twin in the second


def _same(a: Param, b: Param) -> bool:
    """Bit-identical as far as the dump can tell: md5 when both have it, else every statistic
    (repr: NaN equals NaN), else the value."""
    if a.is_tensor != b.is_tensor or a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.md5 is not None or b.md5 is not None:
        return a.md5 == b.md5
    if a.is_tensor:
        return all(
            repr(x) == repr(y)
            for x, y in ((a.max, b.max), (a.min, b.min), (a.mean, b.mean), (a.norm, b.norm))
        )
    return repr(a.value) == repr(b.value)


def _differing(target: list[Param], golden: list[Param]) -> list[tuple[Param, Param | None]]:
    twins = {param.key: param for param in golden}
    found: list[tuple[Param, Param | None]] = []
    for param in target:
        twin = twins.get(param.key)
        if twin is None or not _same(param, twin):
            found.append((param, twin))
    return found


def _dtypes_agree(target: list[Param], golden: list[Param]) -> bool:
    twins = {param.key: param.dtype for param in golden if param.is_tensor}
    return all(
        twins.get(param.key, param.dtype) == param.dtype for param in target if param.is_tensor
    )


def compare_runs(
    db: VisDb, target_key: GraphKey, golden_key: GraphKey, ops: list[Op]
) -> RunsCompared:
    """The first difference between the target run's ops and their twins in the golden run."""
    view = overlay.graph_view(db, target_key)
    counterpart = view.columns["counterpart"]
    golden_view = overlay.graph_view(db, golden_key)
    twins = {op.order: int(counterpart[op.order]) for op in ops}
    golden_params = node_data.params_by_order(db, golden_key, [o for o in twins.values() if o >= 0])
    same_configuration = True
    unpaired = 0
    difference: Difference | None = None
    for op in ops:
        twin = twins[op.order]
        if twin < 0 or twin >= len(golden_view):
            unpaired += 1
            continue
        golden = golden_params.get(twin, [])
        if not _dtypes_agree(op.params, golden):
            same_configuration = False
        if difference is not None:
            continue
        inputs = [p for p in op.params if p.role in (Role.INPUT, Role.PARAMETERS)]
        golden_inputs = [p for p in golden if p.role in (Role.INPUT, Role.PARAMETERS)]
        differ = _differing(inputs, golden_inputs)
        kind = UNCAPTURED
        if not differ:
            outputs = [p for p in op.params if p.role in (Role.OUTPUT, Role.PARAMETERS_GRAD)]
            golden_outputs = [p for p in golden if p.role in (Role.OUTPUT, Role.PARAMETERS_GRAD)]
            differ = _differing(outputs, golden_outputs)
            kind = NONDETERMINISTIC
        if differ:
            evidence = [evidence_of(p, "first run") for p, _ in differ]
            evidence += [evidence_of(g, "second run") for _, g in differ if g is not None]
            difference = Difference(
                op.name,
                str(golden_view.names[twin]),
                op.position,
                kind,
                [p.key for p, _ in differ],
                evidence,
                op.module,
            )
    return RunsCompared(same_configuration, difference, unpaired)
