"""Which ``.vis.db`` files show the first departure's step: the guide's next step after the
monitor is a dump of that step, and once it is built the page links to it.

The rule (docs/monitor-trends.md, "From the first departure to a .vis.db"):

* a file *holds the step* when its ``tb_config`` lists the departure's step and rank (the
  dumper's step counter and the monitor's both count optimizer steps from 0);
* a run's *home* is the folder that holds its monitor output folder (the output folder
  itself when the run was given as a folder, the folder of the ``.trend.db`` otherwise);
* a file graphboard built records the dump folders it was built from (``gb_meta`` inputs): it
  is *of the run* when its target dump lies under the target run's home, or its golden dump
  under the golden run's home. A file of another run is not offered;
* a file whose inputs are unknown (msprobe's own) is offered on the step alone.

Files of the run come first, then those matched on the step alone, each by id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from graphboard.monitor.formats import TREND_DB_SUFFIX

Match = Literal["step and run", "step"]


@dataclass(frozen=True)
class GraphCandidate:
    """A .vis.db under the data dir, as far as the rule needs it."""

    graph_id: str
    steps: list[int]
    ranks: list[int]
    target: Path | None  # the dump folders it was built from; None when not recorded
    golden: Path | None


@dataclass(frozen=True)
class GraphLink:
    graph_id: str
    match: Match


def run_home(source: Path) -> Path:
    """The folder holding a run's monitor output folder (see the module's rule)."""
    output = source.parent if source.name.endswith(TREND_DB_SUFFIX) else source
    return output.parent


def _under(path: Path | None, folder: Path) -> bool:
    return path is not None and path.is_relative_to(folder)


def graphs_of_step(
    candidates: list[GraphCandidate], step: int, rank: int, target: Path, golden: Path
) -> list[GraphLink]:
    """The candidates that show ``step`` on ``rank`` of the runs ``target`` / ``golden`` (the
    monitor inputs, resolved paths), best first."""
    target_home, golden_home = run_home(target), run_home(golden)
    of_run: list[GraphLink] = []
    on_step: list[GraphLink] = []
    for candidate in sorted(candidates, key=lambda c: c.graph_id):
        if step not in candidate.steps or rank not in candidate.ranks:
            continue
        if candidate.target is None and candidate.golden is None:
            on_step.append(GraphLink(candidate.graph_id, "step"))
        elif _under(candidate.target, target_home) or _under(candidate.golden, golden_home):
            of_run.append(GraphLink(candidate.graph_id, "step and run"))
    return of_run + on_step
