"""The issue's "what must be true" on real monitor output (msprobe's TrainerMon, the project's
small GPT, 4 blocks, 50 steps, 1 rank and 4 ranks under gloo; faults from step 20 in block 2)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from monitor_runs import FAULT_LAYER, FAULT_STEP, STEPS, MonitorRuns

from graphboard.cli import graphboard_main
from graphboard.monitor.compare import MonitorReport, compare_runs, read_run
from graphboard.monitor.trend_db import trend_db_rows
from msprobe_runner import msprobe_python

BLOCK = f"blocks.{FAULT_LAYER}"
TOOL_CHECK = Path(__file__).with_name("trend_tool_check.py")


def report_of(target: Path, golden: Path) -> MonitorReport:
    return compare_runs(read_run(target), read_run(golden))


@pytest.mark.parametrize("ranks", [1, 4])
def test_a_rerun_of_the_golden_configuration_never_departs(
    monitor_runs: MonitorRuns, ranks: int
) -> None:
    run = monitor_runs.one_rank if ranks == 1 else monitor_runs.four_ranks
    report = report_of(run("rerun"), run("golden"))
    assert report.target.ranks == list(range(ranks))
    assert report.target.max_step == STEPS - 1
    metrics = {j.cells.metric for j in report.judged}
    assert {"actv", "actv_grad", "grad_unreduced", "grad_reduced", "exp_avg"} <= metrics
    assert report.cells > 0
    assert report.departing == 0
    assert report.first is None
    assert all(d is None for d in report.departures.values())
    assert report.spikes["target"] == []
    assert report.reduction["target"].non_finite == []
    assert report.reduction["target"].bad == []
    if ranks > 1:
        assert report.reduction["target"].reduction == "mean"
        assert report.reduction["target"].checked > 0


@pytest.mark.parametrize(
    ("run", "kind", "step", "module"),
    [
        # the weights of blocks.2.mlp.fc scaled before step 20's forward: that MLP's output
        ("scale", "forward", FAULT_STEP, f"{BLOCK}.mlp"),
        # block 2's learning rate x10 from step 20: its parameters' update at step 20, and
        # the forward pass one step later
        ("lr", "state", FAULT_STEP, BLOCK),
        # block 2's MLP output rounded to bfloat16 from step 20
        ("bf16", "forward", FAULT_STEP, f"{BLOCK}.mlp"),
        # blocks.2.mlp.fc's weight gradient x100 at step 20
        ("spike", "gradient", FAULT_STEP, f"{BLOCK}.mlp.fc"),
    ],
)
def test_a_fault_from_step_k_departs_at_k_in_its_module(
    monitor_runs: MonitorRuns, run: str, kind: str, step: int, module: str
) -> None:
    report = report_of(monitor_runs.one_rank(run), monitor_runs.one_rank("golden"))
    first = report.first
    assert first is not None
    assert (first.step, first.kind) == (step, kind)
    assert first.module == module or first.module.startswith(module + ".")
    for departure in report.departures.values():  # nothing departs before the fault
        assert departure is None or departure.step >= FAULT_STEP
    if run == "lr":
        forward = report.departures["forward"]
        assert forward is not None and forward.step == FAULT_STEP + 1
        assert forward.module.startswith(BLOCK)


def test_a_gradient_spike_is_found_with_its_layer_first(monitor_runs: MonitorRuns) -> None:
    report = report_of(monitor_runs.one_rank("spike"), monitor_runs.one_rank("golden"))
    spikes = report.spikes["target"]
    assert [s.step for s in spikes] == [FAULT_STEP]
    assert spikes[0].parameters[0] == f"{BLOCK}.mlp.fc.weight"
    assert spikes[0].norm > 5 * spikes[0].baseline
    assert report.spikes["golden"] == []


def test_the_rank_with_a_nan_unreduced_gradient_is_named(monitor_runs: MonitorRuns) -> None:
    report = report_of(monitor_runs.four_ranks("nan"), monitor_runs.four_ranks("golden"))
    non_finite = report.reduction["target"].non_finite
    assert non_finite, "no rank named"
    first = non_finite[0]
    assert (first.rank, first.first_step, first.parameters) == (
        3,
        FAULT_STEP,
        [f"{BLOCK}.mlp.fc.weight"],
    )
    assert all(n.first_step > FAULT_STEP for n in non_finite[1:])  # the others after it
    assert report.first is not None and report.first.rank == 3
    assert "first on rank 3 at step 20" in report.summary()


def test_a_reduced_gradient_that_is_not_the_mean_is_named(monitor_runs: MonitorRuns) -> None:
    reduction = report_of(
        monitor_runs.four_ranks("notmean"), monitor_runs.four_ranks("golden")
    ).reduction["target"]
    assert reduction.reduction == "mean"
    assert {b.parameter for b in reduction.bad} == {f"{BLOCK}.mlp.fc.weight"}
    assert sorted(b.step for b in reduction.bad) == list(range(FAULT_STEP, STEPS))


def _cli_output(
    tmp_path: Path, target: Path, golden: Path, capsys: pytest.CaptureFixture[str]
) -> dict[str, object]:
    code = graphboard_main(
        ["monitor", "-tp", str(target), "-gp", str(golden), "-o", str(tmp_path), "--json"]
    )
    answer = json.loads(capsys.readouterr().out)
    assert code == (0 if answer["first_departure"] is None else 1)
    return answer


def test_the_trend_db_holds_data2db_rows_and_msprobe_tooling_reads_it(
    monitor_runs: MonitorRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the 4-rank run with a NaN: several ranks, NaN (NULL) and clamped infinities in the rows
    target = monitor_runs.four_ranks("nan")
    answer = _cli_output(tmp_path, target, monitor_runs.four_ranks("golden"), capsys)
    ours = Path(str(answer["output"]))
    theirs = monitor_runs.data2db(target)
    our_rows, their_rows = trend_db_rows(ours), trend_db_rows(theirs)
    assert len(our_rows) > 1000
    assert our_rows == their_rows  # same targets, metrics, ranks, steps and values (NULL = NaN)
    query = "SELECT target_name, vpp_stage, micro_step FROM monitoring_targets"
    with sqlite3.connect(ours) as a, sqlite3.connect(theirs) as b:
        assert set(a.execute(query)) == set(b.execute(query))
        assert (
            a.execute("SELECT * FROM monitoring_metrics").fetchall()
            == b.execute("SELECT * FROM monitoring_metrics").fetchall()
        )
    # msprobe's trend_analyzer (its TensorBoard tab's service) gives the same answers on both
    seen = []
    for database in (ours, theirs):
        result = subprocess.run(
            [msprobe_python(), str(TOOL_CHECK), str(database)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        seen.append(json.loads(result.stdout))
    assert seen[0] == seen[1]
    assert seen[0]["metrics"]


def test_msprobe_trend_db_as_input_finds_the_same_departure(
    monitor_runs: MonitorRuns,
) -> None:
    target, golden = monitor_runs.four_ranks("nan"), monitor_runs.four_ranks("golden")
    from_csv = report_of(target, golden)
    from_db = compare_runs(
        read_run(monitor_runs.data2db(target)), read_run(monitor_runs.data2db(golden))
    )
    assert from_csv.first is not None and from_db.first is not None
    assert (from_db.first.step, from_db.first.module) == (
        from_csv.first.step,
        from_csv.first.module,
    )
    assert from_db.cells == from_csv.cells
