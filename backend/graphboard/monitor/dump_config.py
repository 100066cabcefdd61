"""msprobe's dump ``config.json`` for the guide's next step: dump the first departure's step,
on its rank, for the modules that depart there, in both runs. msprobe's ``list`` matches a
dump name that contains an entry, so ``Module.<name>.`` selects a module (any class, pass and
call) and the modules under it; level L0 dumps modules, task ``statistics`` their statistics."""

from __future__ import annotations

from graphboard.monitor.compare import MonitorReport
from graphboard.monitor.departure import Departure

MAX_MODULES = 16  # a focused dump; the departure's later modules follow from the first


def config_for(step: int, rank: int, modules: list[str]) -> dict[str, object]:
    """The config for ``modules`` (departing first first) at ``step`` on ``rank``."""
    modules = [m for m in modules if m][:MAX_MODULES]
    return {
        "task": "statistics",
        "dump_path": f"./dump_step{step}",
        "rank": [rank],
        "step": [step],
        "level": "L0",
        "async_dump": False,
        "statistics": {
            "scope": [],
            "list": [f"Module.{module}." for module in modules],
            "data_mode": ["all"],
            "summary_mode": "statistics",
        },
    }


def dump_config(report: MonitorReport) -> dict[str, object]:
    if report.first is None:
        raise ValueError("no departure: nothing to dump")
    first: Departure = report.first
    return config_for(first.step, first.rank, first.modules_at_step or [first.module])
