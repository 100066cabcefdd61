"""msprobe's pairing of a node's parameters, where it differs from graphboard's.

graphboard pairs a node's parameters by name (``engine.pair_params``): the target's
``weight`` gradient with the golden's ``weight`` gradient, wherever each side lists it.
msprobe pairs by position: the i-th target parameter of each kind (inputs, parameters,
outputs, parameter gradients) with the i-th golden one (``get_accuracy`` in its
``core/compare/utils.py``). The two differ where a kind lists the same names on both sides in
another order. A module's parameter gradients are recorded in the order their hooks fire,
which the autograd engine decides, and that order changes with the precision: Qwen2's q/k/v
projections (Linears with a bias) record the bias's gradient first in fp32 and the weight's
first under bf16 autocast. msprobe then sets the target's weight gradient against the golden's
bias gradient, and its own file has a shape error there.

msprobe's rules judge msprobe's pairs, so that ``precision_index`` is msprobe's; the rows
keep the pairing by name (their metrics, the dtype-aware rules, the detail panel), and a row
that msprobe's rules judged against another golden parameter says which
(docs/differences.md, "Parameters pair by name").

Only a *reordering* is followed: where the names on the two sides differ (an argument given
on one side only, a null leaf), the pairing by name and its fall-back stay, as before.
"""

from __future__ import annotations

from collections import defaultdict

from graphboard.compare.result import ParamRow
from graphboard.dump.records import Param, Role

MSG_POSITION = "msprobe's rules pair it by position, with the golden's {}: {}"


def _by_role(params: list[Param]) -> dict[Role, list[Param]]:
    """A node's parameters by kind, each in its listed order."""
    found: dict[Role, list[Param]] = defaultdict(list)
    for param in params:
        found[param.role].append(param)
    return found


def positional_goldens(target: list[Param], golden: list[Param]) -> dict[int, Param] | None:
    """For each target parameter (by ``id``) whose msprobe pair is another golden parameter
    than its namesake, that golden parameter; None when no kind is reordered (nearly always:
    one pass over the keys)."""
    if len(target) == len(golden) and all(
        mine.key == other.key for mine, other in zip(target, golden, strict=True)
    ):
        return None  # the same names in the same order: every pair is the same either way
    target_roles, golden_roles = _by_role(target), _by_role(golden)
    moved: dict[int, Param] | None = None
    for role, ours in target_roles.items():
        theirs = golden_roles.get(role)
        if theirs is None or len(theirs) != len(ours):
            continue
        our_keys = [param.key for param in ours]
        their_keys = [param.key for param in theirs]
        if our_keys == their_keys or sorted(our_keys) != sorted(their_keys):
            continue  # the same order, or other names: the pairing by name stands
        for mine, other in zip(ours, theirs, strict=True):
            if mine.key != other.key:
                if moved is None:
                    moved = {}
                moved[id(mine)] = other
    return moved


def msprobe_rows(rows: list[ParamRow], moved: dict[int, Param]) -> list[ParamRow]:
    """``rows`` as msprobe pairs them: a fresh row against the moved golden parameter where
    ``positional_goldens`` found one, the row itself elsewhere (same index)."""
    paired: list[ParamRow] = []
    for row in rows:
        other = moved.get(id(row.target)) if row.target is not None else None
        paired.append(row if other is None else ParamRow(row.target, other, paired_by="position"))
    return paired


def carry_back(rows: list[ParamRow], judged: list[ParamRow]) -> None:
    """Give each re-paired row msprobe's level for it, and say which golden it was set
    against (the row keeps its own golden and metrics)."""
    for row, other in zip(rows, judged, strict=True):
        if other is row:
            continue
        assert other.golden is not None
        row.level = other.level
        row.requires_grad_consistent = other.requires_grad_consistent
        said = "; ".join(other.messages) if other.messages else "pass"
        row.messages = [MSG_POSITION.format(other.golden.key, said)]
