"""The msprobe ``config.json`` for the next dump an answer calls for (docs/diagnose.md).

msprobe's dumper reads ``task``, ``dump_path``, ``rank``, ``step``, ``level`` and a section
named after the task holding ``scope``, ``list`` and ``data_mode``; an entry of ``list`` is
matched as a substring of a dumped name (msprobe's scope check), so the full name of one op
(``Functional.linear.0.forward``) selects that op alone, and a module's name at level ``mix``
selects the module and everything that runs inside it.
"""

from __future__ import annotations

from typing import Any

DUMP_PATH = "./next_dump"


def config(
    *,
    task: str,
    level: str,
    step: int,
    ranks: list[int],
    names: list[str],
    data_mode: str = "all",
) -> dict[str, Any]:
    section: dict[str, Any] = {"scope": [], "list": names, "data_mode": [data_mode]}
    if task == "statistics":
        section["summary_mode"] = "statistics"
    return {
        "task": task,
        "dump_path": DUMP_PATH,
        "rank": ranks,
        "step": [step],
        "level": level,
        task: section,
    }


def op_tensors(name: str, step: int, ranks: list[int]) -> dict[str, Any]:
    """This op's input and output tensors: to look at them and to run it alone."""
    return config(task="tensor", level="L1", step=step, ranks=ranks, names=[name])


def module_statistics(module: str | None, step: int, ranks: list[int]) -> dict[str, Any]:
    """Every op inside the module (the whole model without one), with stacks: which op the
    input came from."""
    return config(
        task="statistics", level="mix", step=step, ranks=ranks, names=[module] if module else []
    )


def previous_backward(step: int, ranks: list[int]) -> dict[str, Any]:
    """The previous step's backward: the gradients whose update made the weight non-finite."""
    return config(
        task="statistics",
        level="mix",
        step=max(step - 1, 0),
        ranks=ranks,
        names=[],
        data_mode="backward",
    )
