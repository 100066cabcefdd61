"""Where inf/NaN first appears on one rank, and what kind of place it is (docs/diagnose.md).

The ops are read in execution order (a module's record after the ops inside it are passed
over: the innermost op that shows a value is where it appeared). The first op holding a
non-finite value that nothing before it made deliberately is the origin, classed as the guide
(§2.3.1.1) reads it:

- weight: a parameter of the op's module is already non-finite (the previous step's update
  made it: dump that step's backward);
- input: an input is non-finite though no captured op made it (an op ran outside the dump);
- output: the inputs are finite and the output is not (this op made it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from graphboard.diagnose.nonfinite import (
    NAN,
    NONE,
    PLACING_OPS,
    Kinds,
    carries,
    is_additive_mask,
    kinds,
    op_family,
)
from graphboard.dump.records import Param, Role
from graphboard.overflow import expected_anomaly

WEIGHT, INPUT, OUTPUT = "weight", "input", "output"


@dataclass(slots=True)
class Op:
    """One op's record: its name, its parameters, and (read only when asked: most ops are
    never looked at twice) its module and that module's parameters (weights)."""

    name: str
    params: list[Param]
    position: int = 0  # in execution order, among the ops read
    order: int = -1  # node_order in the .vis.db
    resolve: Callable[[], tuple[str | None, list[Param]]] | None = None
    _module: tuple[str | None, list[Param]] | None = None

    def _held(self) -> tuple[str | None, list[Param]]:
        if self._module is None:
            self._module = self.resolve() if self.resolve is not None else (None, [])
        return self._module

    @property
    def module(self) -> str | None:
        """The nearest module above the op that has a record."""
        return self._held()[0]

    @property
    def weights(self) -> list[Param]:
        """That module's parameters: what the op may have been handed as weights."""
        return self._held()[1]


@dataclass(slots=True)
class ParamEvidence:
    key: str
    kinds: list[str]
    dtype: str | None
    shape: list[object] | None
    max: float | str | None
    min: float | str | None
    note: str | None = None


@dataclass(slots=True)
class Origin:
    node: str
    position: int
    kind: str  # weight | input | output
    evidence: list[ParamEvidence]  # the parameters that hold the values, and the clean inputs
    module: str | None  # the module whose parameter it is, or that holds the op
    by_design: list[str]  # ops before it whose infinities were made on purpose (first few)


BY_DESIGN_SHOWN = 5


def _stat(value: object) -> float | str | None:
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return str(value) if value is not None else None


def evidence_of(param: Param, note: str | None = None) -> ParamEvidence:
    return ParamEvidence(
        param.key,
        sorted(kinds(param)),
        param.dtype,
        list(param.shape) if param.shape is not None else None,
        _stat(param.max if param.is_tensor else param.value),
        _stat(param.min if param.is_tensor else param.value),
        note,
    )


def _same_tensor(a: Param, b: Param) -> bool:
    """The same tensor by its statistics (a weight passed to the op inside its module)."""
    return (
        a.is_tensor
        and b.is_tensor
        and a.shape == b.shape
        and a.dtype == b.dtype
        and all(repr(x) == repr(y) for x, y in ((a.max, b.max), (a.min, b.min), (a.mean, b.mean)))
    )


def _bad(params: Iterable[Param], node: str) -> list[tuple[Param, Kinds]]:
    found = []
    for param in params:
        held = kinds(param)
        if held and not expected_anomaly(node, param):
            found.append((param, held))
    return found


def find_origin(ops: Sequence[Op]) -> Origin | None:
    """The first op whose non-finite values nothing before it made on purpose; None if none."""
    made: set[str] = set()  # infinities an op made on purpose so far: they flow on
    by_design: list[str] = []
    for op in ops:
        inputs = [p for p in op.params if p.role is Role.INPUT]
        outputs = [p for p in op.params if p.role in (Role.OUTPUT, Role.PARAMETERS_GRAD)]
        own_weights = [p for p in op.params if p.role is Role.PARAMETERS]
        bad_in = _bad(inputs, op.name)
        bad_weights = _bad(own_weights, op.name)
        bad_out = _bad(outputs, op.name)
        if not (bad_in or bad_out or bad_weights):
            continue
        weights = [
            (param, held)
            for param, held in bad_in
            if any(_same_tensor(param, weight) for weight in op.weights)
        ] + bad_weights
        placing = op_family(op.name) in PLACING_OPS
        unexplained_in = [
            (param, held)
            for param, held in bad_in
            if (NAN in held or not (held <= made or placing or is_additive_mask(param)))
            and all(param is not w for w, _ in weights)
        ]
        if weights or unexplained_in:
            kind = WEIGHT if weights else INPUT
            shown = weights or unexplained_in
            return Origin(
                op.name,
                op.position,
                kind,
                [evidence_of(p, _weight_note(p, op) if kind == WEIGHT else None) for p, _ in shown]
                + [evidence_of(p) for p, _ in bad_out],
                op.module,
                by_design[:BY_DESIGN_SHOWN],
            )
        # only this op's own arguments explain its output: an infinity made on purpose
        # earlier explains an output only through an argument that holds it
        given = {held for param in inputs for held in _carried(param)}
        unexplained_out = [
            (param, held)
            for param, held in bad_out
            if NAN in held or not (held <= given or placing)
        ]
        if unexplained_out:
            clean_inputs = [
                evidence_of(p, "made on purpose earlier" if kinds(p) else "finite")
                for p in inputs
                if p.is_tensor
            ]
            return Origin(
                op.name,
                op.position,
                OUTPUT,
                [evidence_of(p) for p, _ in unexplained_out] + clean_inputs,
                op.module,
                by_design[:BY_DESIGN_SHOWN],
            )
        for _param, held in bad_out:
            made |= held
        if bad_out and (placing or not bad_in):
            by_design.append(op.name)
        for param, held in bad_in:
            if placing or is_additive_mask(param):
                made |= held
    return None


def _carried(param: Param) -> Kinds:
    found = {kind for kind in ("+inf", "-inf") if carries(param, kind)}
    return frozenset(found) if found else NONE


def _weight_note(param: Param, op: Op) -> str:
    if param.role is Role.PARAMETERS:
        return f"parameter of {op.name}"
    held = next((w.key for w in op.weights if _same_tensor(param, w)), "a parameter")
    return f"{held} of {op.module}"
