"""The rule from a first departure to the .vis.db files of its step (graph_links): step and
rank held, of the run when the file records dump folders under the run's home, msprobe's
files (no inputs recorded) on the step alone, another run's files never."""

from __future__ import annotations

from pathlib import Path

from graphboard.monitor.graph_links import GraphCandidate, graphs_of_step, run_home

DATA = Path("/data")
TARGET = DATA / "exp" / "target" / "monitor"  # the monitor's output folder of the target run
GOLDEN = DATA / "exp" / "golden" / "monitor"


def candidate(
    graph_id: str,
    steps: list[int],
    target: Path | None = None,
    golden: Path | None = None,
    ranks: list[int] | None = None,
) -> GraphCandidate:
    return GraphCandidate(graph_id, steps, ranks if ranks is not None else [0], target, golden)


def test_a_runs_home_is_the_folder_holding_its_monitor_output() -> None:
    assert run_home(TARGET) == DATA / "exp" / "target"
    assert run_home(TARGET / "monitor_data.trend.db") == DATA / "exp" / "target"


def test_files_of_the_run_first_then_the_step_alone_never_another_run() -> None:
    found = graphs_of_step(
        [
            candidate("msprobe_step20", [20]),  # msprobe's: no inputs recorded
            candidate("ours", [0, 20], DATA / "exp" / "target" / "dump"),
            candidate("by_golden", [20], DATA / "elsewhere", DATA / "exp" / "golden" / "dump"),
            candidate("other_run", [20], DATA / "other" / "dump", DATA / "other" / "gold"),
            candidate("other_step", [19], DATA / "exp" / "target" / "dump"),
            candidate("other_rank", [20], DATA / "exp" / "target" / "dump", ranks=[1]),
        ],
        step=20,
        rank=0,
        target=TARGET,
        golden=GOLDEN,
    )
    assert [(link.graph_id, link.match) for link in found] == [
        ("by_golden", "step and run"),
        ("ours", "step and run"),
        ("msprobe_step20", "step"),
    ]


def test_nothing_without_a_file_of_that_step() -> None:
    assert graphs_of_step([candidate("a", [0, 1])], 20, 0, TARGET, GOLDEN) == []
