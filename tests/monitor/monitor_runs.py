"""Real monitor output, made once per test session with msprobe's TrainerMon
(monitor_train_script.py, run by msprobe's Python): one process trains every 1-rank run, one
torchrun (gloo) every 4-rank run; msprobe's ``data2db`` of a run on demand. Every test module
asking shares them: they live under the session's base temporary folder, or, to keep them
between sessions, under ``GRAPHBOARD_MONITOR_RUNS`` (a folder; runs found complete there are
reused)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from msprobe_runner import msprobe_binary, msprobe_python

SCRIPT = Path(__file__).with_name("monitor_train_script.py")
FAULT_STEP, FAULT_LAYER, STEPS = 20, 2, 50
ONE_RANK = {
    "golden": "none",
    "rerun": "none",
    "scale": "scale",
    "lr": "lr",
    "bf16": "bf16",
    "spike": "spike",
}
FOUR_RANKS = {"golden": "none", "rerun": "none", "nan": "nan", "notmean": "notmean"}


class MonitorRuns:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _train(self, name: str, runs: dict[str, str], ranks: int) -> Path:
        out = self.root / name
        if (out / "done").is_file():
            return out
        python = msprobe_python()
        arguments = [
            str(SCRIPT),
            str(out),
            *(f"{run}={fault}" for run, fault in runs.items()),
            "--step",
            str(FAULT_STEP),
            "--layer",
            str(FAULT_LAYER),
            "--steps",
            str(STEPS),
        ]
        if ranks > 1:
            torchrun = str(Path(python).with_name("torchrun"))
            command = [torchrun, "--standalone", "--nproc_per_node", str(ranks), *arguments]
        else:
            command = [python, *arguments]
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=3600, cwd=self.root, check=False
        )
        assert result.returncode == 0, f"{command} failed:\n{result.stderr[-3000:]}"
        (out / "done").write_text("")
        return out

    def one_rank(self, run: str) -> Path:
        return self._train("one-rank", ONE_RANK, 1) / run

    def four_ranks(self, run: str) -> Path:
        return self._train("four-ranks", FOUR_RANKS, 4) / run

    def data2db(self, run: Path) -> Path:
        """msprobe's own ``data2db --format monitor`` of a run: its monitor_data.trend.db."""
        out = self.root / "data2db" / f"{run.parent.name}-{run.name}"
        database = out / "monitor_data.trend.db"
        if not database.is_file():
            command = [
                msprobe_binary(),
                "data2db",
                "--data",
                str(run),
                "--db",
                str(out),
                "--format",
                "monitor",
            ]
            result = subprocess.run(command, capture_output=True, text=True, timeout=900)
            assert database.is_file(), f"{command} wrote nothing:\n{result.stderr[-3000:]}"
        return database


@pytest.fixture(scope="session")
def monitor_runs(tmp_path_factory: pytest.TempPathFactory) -> MonitorRuns:
    kept = os.environ.get("GRAPHBOARD_MONITOR_RUNS")
    return MonitorRuns(Path(kept) if kept else tmp_path_factory.getbasetemp() / "monitor-runs")
