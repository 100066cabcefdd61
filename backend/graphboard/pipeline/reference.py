"""Planning a compare with a noise reference (-nr): each task's reference rank folder.

The reference is laid out as the target (the same run in another configuration): a rank folder
against a rank folder, a step folder against a step folder, and so on. A (step, rank) the
reference lacks is judged by the modelled band alone, which the build warns of and gb_meta's
``missing`` records; a folder of another kind is refused before any work.
"""

from __future__ import annotations

from typing import Any

from graphboard.dump.layout import LayoutKind, discover
from graphboard.errors import CompareError
from graphboard.pipeline.options import BuildOptions, Task


def attach_references(
    options: BuildOptions, tasks: list[Task], warnings: list[str], missing: dict[str, Any]
) -> None:
    """Set each task's ``reference`` to the noise reference's folder of its (step, rank)."""
    assert options.noise_reference is not None
    if options.golden is None:
        raise CompareError("-nr (a noise reference) needs a golden dump (-gp)")
    if options.parallel is not None:
        raise CompareError(
            "-nr (a noise reference) is not supported with a parallel merge (--rank_size)"
        )
    layout = discover(options.noise_reference)
    target = discover(options.target)
    warnings.extend(f"noise reference: {warning}" for warning in layout.warnings)
    if layout.kind is not target.kind:
        raise CompareError(
            f"the noise reference {layout.root} is a {layout.kind.value} folder but the target "
            f"{target.root} is a {target.kind.value} folder; point both at the same level "
            "(rank folder, step folder or dump root)"
        )
    by_key = {(item.step, item.rank): item for item in layout.ranks}
    lacking: list[list[int]] = []
    for task in tasks:
        if layout.kind is LayoutKind.RANK:
            task.reference = layout.ranks[0]
            continue
        step = task.step if layout.kind is LayoutKind.STEPS else layout.steps[0]
        task.reference = by_key.get((step, task.rank))
        if task.reference is None:
            lacking.append([task.step, task.rank])
    if lacking:
        missing["noise_reference"] = lacking
        warnings.append(
            f"the noise reference has no folder for (step, rank) {lacking}: those are judged "
            "by the modelled band alone"
        )
